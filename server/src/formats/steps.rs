//! Where a run's model turns begin and end, read from its events, for the formats that have
//! steps (the AI SDK's `start-step`/`finish-step`, AG-UI's `STEP_STARTED`/`STEP_FINISHED`). The
//! log does not mark turns apart, but a model turn ends with its `usage` event and the turn's
//! tool calls follow it. So a step closes when the next turn's reasoning or text arrives (or a
//! second `usage` comes without content between: a turn that made only calls, whose calls go in
//! a step of their own), and calls stay in the step of the turn that made them. An agent without
//! model turns (the demo) gives one step.

/// What a format does before the event at hand: close the open step, then open a new one (each
/// by its number, from 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepChange {
    pub close: Option<u32>,
    pub open: Option<u32>,
}

/// The steps of one stream.
#[derive(Debug, Default)]
pub struct Steps {
    open: bool,
    /// The open step's model turn has reported its usage: the next content is a new turn.
    turn_ended: bool,
    /// Steps opened so far: the open one's number.
    opened: u32,
}

impl Steps {
    /// Reasoning or text: a new step when the last turn ended.
    pub fn content(&mut self) -> StepChange {
        let close = std::mem::take(&mut self.turn_ended) && self.open;
        self.change(close, close || !self.open)
    }

    /// A tool call: in the open step (its turn's), or a new one when none is open.
    pub fn call(&mut self) -> StepChange {
        self.change(false, !self.open)
    }

    /// A turn's usage: it ends the turn; a second one with no content between ends a turn that
    /// made only calls, and what follows goes in a step of its own.
    pub fn usage(&mut self) -> StepChange {
        let again = std::mem::replace(&mut self.turn_ended, true);
        match again {
            true => self.change(self.open, true),
            false => StepChange::default(),
        }
    }

    /// The stream ends (or pauses): the open step closes.
    pub fn end(&mut self) -> StepChange {
        self.turn_ended = false;
        self.change(self.open, false)
    }

    /// Whether the open step's turn has ended: the next content may open a step.
    pub fn turn_ended(&self) -> bool {
        self.turn_ended
    }

    fn change(&mut self, close: bool, open: bool) -> StepChange {
        let closed = close.then_some(self.opened);
        if close {
            self.open = false;
        }
        if open {
            self.open = true;
            self.opened += 1;
        }
        StepChange {
            close: closed,
            open: open.then_some(self.opened),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(close: Option<u32>, open: Option<u32>) -> StepChange {
        StepChange { close, open }
    }

    #[test]
    fn turns_of_content_and_of_calls_only_are_steps_of_their_own() {
        let mut steps = Steps::default();
        let none = StepChange::default();
        // Turn 1: text, its usage, its call; turn 2 (calls only): usage, call; turn 3: text.
        assert_eq!(steps.content(), change(None, Some(1)));
        assert_eq!(steps.content(), none);
        assert_eq!(steps.usage(), none);
        assert_eq!(steps.call(), none);
        assert_eq!(steps.usage(), change(Some(1), Some(2)));
        assert_eq!(steps.call(), none);
        assert_eq!(steps.content(), change(Some(2), Some(3)));
        assert_eq!(steps.usage(), none);
        assert_eq!(steps.end(), change(Some(3), None));
        assert_eq!(steps.end(), none);
    }

    #[test]
    fn a_run_without_turns_is_one_step() {
        let mut steps = Steps::default();
        assert_eq!(steps.call(), change(None, Some(1)));
        assert_eq!(steps.content(), StepChange::default());
        assert_eq!(steps.call(), StepChange::default());
        assert_eq!(steps.end(), change(Some(1), None));
    }
}
