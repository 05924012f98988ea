//! The store's one writer. A dedicated thread owns the only write connection; every write (run
//! starts, checkpoints, finishes) is a job queued to it. It takes whatever is queued, runs it in
//! one `BEGIN IMMEDIATE` transaction (group commit), each job inside its own savepoint so one
//! job's error undoes only that job, commits, and only then answers each caller. Nothing else
//! writes, so no write ever waits on SQLite's lock, and no other work (async workers, the blocking
//! pool) can starve it.
//!
//! Written here rather than taken from a library: sqlx has no group-commit queue, and the shape
//! (jobs are closures over a connection, answered after the commit) is what a PostgreSQL store
//! batches the same way.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::future::BoxFuture;
use sqlx::{sqlite::SqliteConnectOptions, ConnectOptions, Connection, Executor, SqliteConnection};
use tokio::sync::{mpsc, oneshot};

use crate::error::{Error, Result};

/// At most this many jobs share one transaction, so one commit stays short.
const MAX_JOBS_PER_TRANSACTION: usize = 1_000;

/// What a job hands back after it ran: told whether the transaction committed, it answers its
/// caller.
type Answer = Box<dyn FnOnce(Option<&str>) + Send>;
/// A job's work on the connection, inside the writer's transaction: its answer, and its error
/// when the work failed.
type Job = Box<
    dyn for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, (Answer, Option<String>)> + Send,
>;

enum Message {
    Job(Job),
    Close(oneshot::Sender<()>),
}

/// A handle to the writer thread; cheap to clone.
#[derive(Clone)]
pub struct Writer {
    queue: mpsc::UnboundedSender<Message>,
    /// Why the last transaction failed, while writes fail; `None` once one commits again.
    failure: Arc<Mutex<Option<String>>>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("failure", &self.failure())
            .finish()
    }
}

impl Writer {
    /// Opens the write connection on its own thread.
    pub async fn start(options: SqliteConnectOptions) -> Result<Writer, sqlx::Error> {
        let (queue, jobs) = mpsc::unbounded_channel();
        let (ready_tx, ready) = oneshot::channel();
        let failure = Arc::new(Mutex::new(None));
        let thread_failure = failure.clone();
        std::thread::Builder::new()
            .name("glassbox-writer".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(error) => {
                        let _ = ready_tx.send(Err(sqlx::Error::Io(error)));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let connection = match options.connect().await {
                        Ok(connection) => connection,
                        Err(error) => {
                            let _ = ready_tx.send(Err(error));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(()));
                    run(connection, jobs, thread_failure).await;
                });
            })
            .map_err(sqlx::Error::Io)?;
        ready.await.map_err(|_| sqlx::Error::PoolClosed)??;
        Ok(Writer { queue, failure })
    }

    /// Runs `work` in the writer's next transaction and answers once that transaction has
    /// committed. An error from `work` rolls back only its own changes.
    pub async fn write<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, Result<T>> + Send + 'static,
    {
        let (answer_tx, answer) = oneshot::channel::<Result<T>>();
        let job: Job = Box::new(move |connection| {
            Box::pin(async move {
                let result = in_savepoint(connection, work).await;
                let failed = result.as_ref().err().map(ToString::to_string);
                let answer: Answer = Box::new(move |commit_error| {
                    let result = match (result, commit_error) {
                        (Ok(_), Some(error)) => Err(Error::Unavailable(error.to_owned())),
                        (result, _) => result,
                    };
                    let _ = answer_tx.send(result);
                });
                (answer, failed)
            })
        });
        self.queue
            .send(Message::Job(job))
            .map_err(|_| Error::Unavailable("the database writer has stopped".into()))?;
        answer.await.map_err(|_| {
            Error::Unavailable(
                self.failure()
                    .unwrap_or_else(|| "the database writer has stopped".into()),
            )
        })?
    }

    /// Why writes are failing now, if they are.
    pub fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Lets queued jobs finish, then closes the connection.
    pub async fn close(&self) {
        let (done_tx, done) = oneshot::channel();
        if self.queue.send(Message::Close(done_tx)).is_ok() {
            let _ = done.await;
        }
    }
}

async fn in_savepoint<T, F>(connection: &mut SqliteConnection, work: F) -> Result<T>
where
    F: for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, Result<T>>,
{
    connection.execute("SAVEPOINT job").await?;
    match work(&mut *connection).await {
        Ok(value) => {
            connection.execute("RELEASE job").await?;
            Ok(value)
        }
        Err(error) => {
            // When SQLite has rolled the whole transaction back itself (a full disk, an I/O
            // error), these fail too, and so does the commit: every job of the batch hears it.
            let _ = connection.execute("ROLLBACK TO job").await;
            let _ = connection.execute("RELEASE job").await;
            Err(error)
        }
    }
}

async fn run(
    mut connection: SqliteConnection,
    mut queue: mpsc::UnboundedReceiver<Message>,
    failure: Arc<Mutex<Option<String>>>,
) {
    let mut batch: VecDeque<Job> = VecDeque::new();
    let mut closing = None;
    loop {
        if batch.is_empty() {
            if closing.is_some() {
                break;
            }
            match queue.recv().await {
                Some(Message::Job(job)) => batch.push_back(job),
                Some(Message::Close(done)) => closing = Some(done),
                None => break,
            }
        }
        // Group commit: everything that queued up while the last transaction ran goes in this one.
        while batch.len() < MAX_JOBS_PER_TRANSACTION {
            match queue.try_recv() {
                Ok(Message::Job(job)) => batch.push_back(job),
                Ok(Message::Close(done)) => closing = Some(done),
                Err(_) => break,
            }
        }
        if batch.is_empty() {
            continue;
        }
        let result = commit_batch(&mut connection, &mut batch).await;
        let began = result.as_ref().err().is_none_or(|failed| failed.began);
        let error = result.err().map(|failed| failed.error);
        if let Some(error) = &error {
            tracing::error!(%error, "a write transaction failed");
        }
        *failure
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = error;
        if !began {
            // Dropped jobs answer their callers with the failure just recorded.
            batch.clear();
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let _ = connection.close().await;
    if let Some(done) = closing {
        let _ = done.send(());
    }
}

/// Runs queued jobs in one transaction and answers each; the error, if the transaction failed.
/// A job that fails ends the transaction early (its savepoint is rolled back, the others commit):
/// after some errors SQLite has rolled the whole transaction back, and a job run after that would
/// commit on its own. The jobs not run yet stay queued for the next transaction.
async fn commit_batch(
    connection: &mut SqliteConnection,
    batch: &mut VecDeque<Job>,
) -> std::result::Result<(), Failed> {
    if let Err(error) = connection.execute("BEGIN IMMEDIATE").await {
        return Err(Failed {
            error: error.to_string(),
            began: false,
        });
    }
    let mut answers = Vec::with_capacity(batch.len());
    let mut job_error = None;
    while let Some(job) = batch.pop_front() {
        let (answer, failed) = job(&mut *connection).await;
        answers.push(answer);
        if failed.is_some() {
            job_error = failed;
            break;
        }
    }
    let error = match connection.execute("COMMIT").await {
        Ok(_) => None,
        Err(error) => {
            let _ = connection.execute("ROLLBACK").await;
            // A commit that fails after a job failed fails for that job's reason (SQLite rolled
            // the transaction back when the disk filled up): say that, not "no transaction".
            Some(job_error.unwrap_or_else(|| error.to_string()))
        }
    };
    for answer in answers {
        answer(error.as_deref());
    }
    match error {
        None => Ok(()),
        Some(error) => Err(Failed { error, began: true }),
    }
}

struct Failed {
    error: String,
    /// Whether the transaction had begun (its jobs ran and were answered).
    began: bool,
}
