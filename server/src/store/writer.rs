//! The store's one writer. A dedicated thread owns the only write connection; every write (run
//! starts, checkpoints, finishes) is a job queued to it. It takes whatever is queued, runs it in
//! one `BEGIN IMMEDIATE` transaction (group commit), each job inside its own savepoint so one
//! job's error undoes only that job, commits, and only then answers each caller. The savepoints
//! cost no round trip of their own: the statements between two jobs go as one batch
//! (`RELEASE job; SAVEPOINT job`), as do `BEGIN; SAVEPOINT job` before the first. Nothing else
//! writes, so no write ever waits on SQLite's lock, and no other work (async workers, the blocking
//! pool) can starve it.
//!
//! The same writer serves both stores ([`Dialect`]): SQLite (`BEGIN IMMEDIATE` on the file) and
//! PostgreSQL (`BEGIN` on one connection of the instance), where batching matters even more, as
//! every commit is a round trip. A transaction that holds only run starts and checkpoints commits
//! there without waiting for the WAL flush (`Dialect::COMMIT_RELAXED`), the promise SQLite's
//! commits give; a run's end and every other write wait for it. A connection that breaks (PostgreSQL restarted, the network
//! dropped) is opened again before the next transaction.
//!
//! On SQLite the writer's connection is rusqlite's, not sqlx's: sqlx runs each SQLite statement on
//! a worker thread of its own, so every statement of every job was a hop between threads, and
//! under a burst of new runs the hops were most of the writer's time (a start took 1-2 ms, most
//! of it waiting to be scheduled). rusqlite runs the statement on the thread that calls it, here
//! the writer's. Reads stay on sqlx's pool. PostgreSQL keeps sqlx: there each statement is a
//! round trip anyway.
//!
//! Background writes ([`Writer::write_background`]: a checkpoint's search indexing) run in
//! transactions of their own, in the queue's order, but on SQLite on a second thread at the
//! lowest priority (nice 19, [`Background`]): the writer hands it the connection for the
//! transaction and takes it back. The indexing is CPU the streams' threads would otherwise wait
//! for on a busy machine (about 0.2 ms of the per-event p99 at 1,000 streams x 50 events/s,
//! docs/benchmarks.md); at nice 19, and with the core offered back every 0.1 ms
//! ([`OFFER_THE_CORE_EVERY`]), they have it soon after they wake. A background transaction on
//! SQLite yields to a write queued behind it (a run's start or end, say): it stops at SQLite's next
//! progress check and rolls back, its jobs answered with SQLite's interruption
//! ([`Error::is_interrupted`]) for their caller to try again; at that priority, waiting for all
//! of it took a saturated machine's write 0.3-0.7 s.
//!
//! Written here rather than taken from a library: sqlx has no group-commit queue, and the shape
//! (jobs are closures over a connection, answered after the commit) is small.

use std::{
    collections::VecDeque,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use futures::future::BoxFuture;
use sqlx::{Connection, Executor, PgConnection};
use tokio::sync::{mpsc, oneshot};

use crate::error::{Error, Result};

/// At most this many jobs share one transaction, so one commit stays short.
const MAX_JOBS_PER_TRANSACTION: usize = 1_000;

/// What the writer needs of a database: its connection type, how a write transaction begins, and
/// how to run one statement.
pub trait Dialect: Send + Sync + 'static {
    type Connection: Send + 'static;
    /// Takes the write lock at once (SQLite) or just begins (PostgreSQL: rows lock as written),
    /// and opens the first job's savepoint.
    const BEGIN_WITH_SAVEPOINT: &'static str;
    /// Commits a transaction that holds only relaxed jobs ([`Writer::write_relaxed`]), without
    /// waiting for the journal to reach the disk where the database would otherwise wait.
    const COMMIT_RELAXED: &'static str;
    fn execute<'c>(
        connection: &'c mut Self::Connection,
        sql: &'static str,
    ) -> BoxFuture<'c, Result<()>>;
    fn close(connection: Self::Connection) -> BoxFuture<'static, ()>;
    /// Whether background transactions run on [`Background`]'s thread: SQLite does a
    /// statement's work on the thread that runs it; PostgreSQL in its own processes (and a
    /// connection of sqlx's is bound to the runtime that opened it).
    const BACKGROUND_THREAD: bool;
    /// From now on, until called with `None`, every statement on `connection` stops (fails as
    /// interrupted) soon after `asked` is set: how a background transaction yields.
    fn yield_when(_connection: &Self::Connection, _asked: Option<Arc<AtomicBool>>) {}
}

/// How many of SQLite's virtual machine steps a background statement runs between two looks at
/// whether it is asked to yield (tens of microseconds).
const YIELD_CHECK_STEPS: std::os::raw::c_int = 100;

/// How often a background statement offers its core to the threads waiting for one
/// (`sched_yield`, at its next look at whether it is asked to yield). At nice 19 the scheduler
/// still let it keep the core from a thread that woke (until the next tick, 4 ms at 250 Hz,
/// when the thread's lag made it wait: `perf sched`, docs/benchmarks.md); and on a saturated
/// machine the writer's thread, which sets the flag that makes it yield, waited for the core
/// too. Offering it every 0.1 ms: a write behind an indexing write there p50 162 -> 10 ms.
const OFFER_THE_CORE_EVERY: Duration = Duration::from_micros(100);

pub struct Sqlite;
pub struct Postgres;

impl Dialect for Sqlite {
    type Connection = rusqlite::Connection;
    const BEGIN_WITH_SAVEPOINT: &'static str = "BEGIN IMMEDIATE; SAVEPOINT job";
    /// Every commit is already unsynced (WAL with `synchronous = NORMAL`): a crash of the process
    /// loses nothing, one of the machine can lose the last commits.
    const COMMIT_RELAXED: &'static str = "COMMIT";
    const BACKGROUND_THREAD: bool = true;
    /// Runs at once, on the calling (writer's) thread: the future is ready when returned.
    fn execute<'c>(
        connection: &'c mut rusqlite::Connection,
        sql: &'static str,
    ) -> BoxFuture<'c, Result<()>> {
        let done = connection.execute_batch(sql).map_err(Error::from);
        Box::pin(std::future::ready(done))
    }
    fn close(connection: rusqlite::Connection) -> BoxFuture<'static, ()> {
        let _ = connection.close();
        Box::pin(std::future::ready(()))
    }
    /// A progress handler: a statement it stops fails with `SQLITE_INTERRUPT`, and SQLite rolls
    /// the transaction back.
    fn yield_when(connection: &rusqlite::Connection, asked: Option<Arc<AtomicBool>>) {
        match asked {
            Some(asked) => {
                let mut offered = Instant::now();
                connection.progress_handler(
                    YIELD_CHECK_STEPS,
                    Some(move || {
                        if offered.elapsed() >= OFFER_THE_CORE_EVERY {
                            std::thread::yield_now();
                            offered = Instant::now();
                        }
                        asked.load(Ordering::Relaxed)
                    }),
                )
            }
            None => connection.progress_handler(0, None::<fn() -> bool>),
        }
    }
}

impl Dialect for Postgres {
    type Connection = PgConnection;
    const BEGIN_WITH_SAVEPOINT: &'static str = "BEGIN; SAVEPOINT job";
    /// SQLite's promise for starts and checkpoints: the commit does not wait for the WAL flush,
    /// so a crash of PostgreSQL or its machine (not of Glassbox) can lose those of its last
    /// moments (3 x `wal_writer_delay`, 600 ms by default). Any later synchronous commit (a run's
    /// end, any other write) flushes them with its own. Readers see the rows at once all the
    /// same. The flush was most of a start's time (docs/benchmarks.md, "PostgreSQL start path").
    const COMMIT_RELAXED: &'static str = "SET LOCAL synchronous_commit = off; COMMIT";
    const BACKGROUND_THREAD: bool = false;
    fn execute<'c>(
        connection: &'c mut PgConnection,
        sql: &'static str,
    ) -> BoxFuture<'c, Result<()>> {
        Box::pin(async move { connection.execute(sql).await.map(drop).map_err(Error::from) })
    }
    fn close(connection: PgConnection) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let _ = connection.close().await;
        })
    }
}

/// Opens the writer's connection; called again when it breaks.
pub type Connect<D> = Arc<
    dyn Fn() -> BoxFuture<'static, Result<<D as Dialect>::Connection, sqlx::Error>> + Send + Sync,
>;

/// What a job hands back after it ran: told whether the transaction committed, it answers its
/// caller.
type Answer = Box<dyn FnOnce(Option<&Failed>) + Send>;
/// A job's work on the connection, inside the writer's transaction: its answer, and its error
/// when the work failed.
type Work<C> = Box<dyn for<'c> FnOnce(&'c mut C) -> BoxFuture<'c, (Answer, Option<Failed>)> + Send>;

/// A queued job: its work, whether it may commit without the flush
/// ([`Dialect::COMMIT_RELAXED`]), and whether it is a background one
/// ([`Writer::write_background`]).
struct Job<C> {
    work: Work<C>,
    relaxed: bool,
    background: bool,
}

enum Message<C> {
    Job(Job<C>),
    Close(oneshot::Sender<()>),
}

/// A handle to the writer thread; cheap to clone.
pub struct Writer<D: Dialect> {
    queue: mpsc::UnboundedSender<Message<D::Connection>>,
    /// Why the last transaction failed, while writes fail; `None` once one commits again.
    failure: Arc<Mutex<Option<String>>>,
}

impl<D: Dialect> Clone for Writer<D> {
    fn clone(&self) -> Self {
        Writer {
            queue: self.queue.clone(),
            failure: self.failure.clone(),
        }
    }
}

impl<D: Dialect> std::fmt::Debug for Writer<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("failure", &self.failure())
            .finish()
    }
}

impl<D: Dialect> Writer<D> {
    /// Opens the write connection on its own thread.
    pub async fn start(connect: Connect<D>) -> Result<Writer<D>, sqlx::Error> {
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
                    let connection = match connect().await {
                        Ok(connection) => connection,
                        Err(error) => {
                            let _ = ready_tx.send(Err(error));
                            return;
                        }
                    };
                    let background = match D::BACKGROUND_THREAD {
                        true => match Background::spawn::<D>() {
                            Ok(background) => Some(background),
                            Err(error) => {
                                let _ = ready_tx.send(Err(sqlx::Error::Io(error)));
                                return;
                            }
                        },
                        false => None,
                    };
                    let _ = ready_tx.send(Ok(()));
                    let writer: Thread<D> = Thread {
                        connect,
                        failure: thread_failure,
                        background,
                    };
                    writer.run(connection, jobs).await;
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
        F: for<'c> FnOnce(&'c mut D::Connection) -> BoxFuture<'c, Result<T>> + Send + 'static,
    {
        self.queue_job(work, false, false).await
    }

    /// [`Writer::write`] for what a crash of the database's machine may lose, as it may lose the
    /// last checkpoint interval's events anyway: a run's start and its checkpoints. A transaction
    /// that holds only such jobs commits with [`Dialect::COMMIT_RELAXED`].
    pub async fn write_relaxed<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut D::Connection) -> BoxFuture<'c, Result<T>> + Send + 'static,
    {
        self.queue_job(work, true, false).await
    }

    /// [`Writer::write_relaxed`] for work nobody waits on but its caller, which another thread
    /// of the server does at leisure: indexing a checkpoint's finished steps for search. It runs
    /// in a transaction with only background jobs, after every job queued before it; on SQLite
    /// on [`Background`]'s thread, whose priority is the lowest.
    pub async fn write_background<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut D::Connection) -> BoxFuture<'c, Result<T>> + Send + 'static,
    {
        self.queue_job(work, true, D::BACKGROUND_THREAD).await
    }

    async fn queue_job<T, F>(&self, work: F, relaxed: bool, background: bool) -> Result<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut D::Connection) -> BoxFuture<'c, Result<T>> + Send + 'static,
    {
        let (answer_tx, answer) = oneshot::channel::<Result<T>>();
        let work: Work<D::Connection> = Box::new(move |connection| {
            Box::pin(async move {
                let result = in_savepoint::<D, T, F>(connection, work).await;
                let failed = result.as_ref().err().map(Failed::of);
                let answer: Answer = Box::new(move |commit_error| {
                    let result = match (result, commit_error) {
                        (Ok(_), Some(failed)) if failed.interrupted => Err(Error::interrupted()),
                        (Ok(_), Some(failed)) => Err(Error::Unavailable(failed.error.clone())),
                        (result, _) => result,
                    };
                    let _ = answer_tx.send(result);
                });
                (answer, failed)
            })
        });
        self.queue
            .send(Message::Job(Job {
                work,
                relaxed,
                background,
            }))
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

/// Runs `work` in the savepoint `job`, which the writer has opened: on an error the savepoint is
/// rolled back and released; on success it stays open for the writer to release.
async fn in_savepoint<D: Dialect, T, F>(connection: &mut D::Connection, work: F) -> Result<T>
where
    F: for<'c> FnOnce(&'c mut D::Connection) -> BoxFuture<'c, Result<T>>,
{
    let result = work(&mut *connection).await;
    if result.is_err() {
        // When SQLite has rolled the whole transaction back itself (a full disk, an I/O error),
        // this fails too, and so does the commit: every job of the batch hears it.
        let _ = D::execute(connection, "ROLLBACK TO job; RELEASE job").await;
    }
    result
}

/// The writer's queue, with the jobs taken from it and not yet run (in the queue's order) and
/// whether it was asked to close or has closed.
struct Inbox<C> {
    queue: mpsc::UnboundedReceiver<Message<C>>,
    pending: VecDeque<Job<C>>,
    closing: Option<oneshot::Sender<()>>,
    closed: bool,
}

impl<C> Inbox<C> {
    /// Waits for the next message and keeps it: whether it is a job that is not background.
    /// Never ends once the queue has closed.
    async fn receive(&mut self) -> bool {
        if self.closed {
            return std::future::pending().await;
        }
        match self.queue.recv().await {
            Some(message) => self.keep(message),
            None => {
                self.closed = true;
                false
            }
        }
    }

    /// Keeps what is queued now, up to [`MAX_JOBS_PER_TRANSACTION`] pending.
    fn take_queued(&mut self) {
        while self.pending.len() < MAX_JOBS_PER_TRANSACTION {
            match self.queue.try_recv() {
                Ok(message) => {
                    self.keep(message);
                }
                Err(_) => break,
            }
        }
    }

    /// Whether `message` is a job that is not background.
    fn keep(&mut self, message: Message<C>) -> bool {
        match message {
            Message::Job(job) => {
                let urgent = !job.background;
                self.pending.push_back(job);
                urgent
            }
            Message::Close(done) => {
                self.closing = Some(done);
                false
            }
        }
    }

    /// Whether a job that is not background waits.
    fn urgent_waiting(&self) -> bool {
        self.pending.iter().any(|job| !job.background)
    }
}

/// What the writer's thread keeps beside its connection and queue.
struct Thread<D: Dialect> {
    connect: Connect<D>,
    failure: Arc<Mutex<Option<String>>>,
    background: Option<Background<D::Connection>>,
}

impl<D: Dialect> Thread<D> {
    async fn run(
        mut self,
        mut connection: D::Connection,
        queue: mpsc::UnboundedReceiver<Message<D::Connection>>,
    ) {
        let mut inbox = Inbox {
            queue,
            pending: VecDeque::new(),
            closing: None,
            closed: false,
        };
        loop {
            if inbox.pending.is_empty() {
                if inbox.closing.is_some() || inbox.closed {
                    break;
                }
                inbox.receive().await;
            }
            // Group commit: what queued up while the last transaction ran goes in this one.
            inbox.take_queued();
            let mut batch = take_batch(&mut inbox.pending);
            if batch.is_empty() {
                continue;
            }
            let Some((back, result)) = self.transact(connection, &mut batch, &mut inbox).await
            else {
                // No connection left to close: queued jobs hear that the writer has stopped.
                if let Some(done) = inbox.closing {
                    let _ = done.send(());
                }
                return;
            };
            connection = back;
            // Jobs a failed one kept from running go first in the next transaction.
            while let Some(job) = batch.pop_back() {
                inbox.pending.push_front(job);
            }
            self.settle(result, &mut connection, &mut inbox.pending)
                .await;
        }
        D::close(connection).await;
        if let Some(done) = inbox.closing {
            let _ = done.send(());
        }
    }

    /// Runs `batch` in one transaction: on [`Background`]'s thread if it is background work
    /// (which yields to the writes queued behind it meanwhile), else here. The connection back
    /// (a new one if the background thread has gone, `None` if none can be opened) and how the
    /// transaction went.
    async fn transact(
        &mut self,
        mut connection: D::Connection,
        batch: &mut VecDeque<Job<D::Connection>>,
        inbox: &mut Inbox<D::Connection>,
    ) -> Option<(D::Connection, std::result::Result<(), Failed>)> {
        let background = self
            .background
            .as_ref()
            .filter(|_| batch.front().is_some_and(|job| job.background));
        let Some(background) = background else {
            let result = commit_batch::<D>(&mut connection, batch).await;
            return Some((connection, result));
        };
        if let Some((connection, rest, result)) = background
            .commit(connection, std::mem::take(batch), inbox)
            .await
        {
            *batch = rest;
            return Some((connection, result));
        }
        // The thread stopped with the connection (a job panicked): its jobs are lost, as they
        // would be had it been this thread; background jobs run on this thread from now on.
        self.background = None;
        let lost = Failed {
            error: "the background writer stopped; its transaction was lost".into(),
            began: true,
            interrupted: false,
        };
        match (self.connect)().await {
            Ok(connection) => Some((connection, Err(lost))),
            Err(error) => {
                tracing::error!(%error, "the database writer cannot reconnect");
                None
            }
        }
    }

    /// Records how a transaction went; after one that could not begin, drops the jobs queued
    /// (those taken from the queue, as before there were two classes), waits a little and
    /// reopens the connection.
    async fn settle(
        &self,
        result: std::result::Result<(), Failed>,
        connection: &mut D::Connection,
        pending: &mut VecDeque<Job<D::Connection>>,
    ) {
        // A background transaction that yielded has answered its jobs so (their callers try
        // again): it says nothing of the store, so the failure recorded stays as it was.
        if let Err(failed) = &result {
            if failed.interrupted {
                tracing::debug!(error = %failed.error, "a background write yielded");
                return;
            }
        }
        let began = result.as_ref().err().is_none_or(|failed| failed.began);
        let error = result.err().map(|failed| failed.error);
        if let Some(error) = &error {
            tracing::error!(%error, "a write transaction failed");
        }
        *self
            .failure
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = error;
        if !began {
            // Dropped jobs answer their callers with the failure just recorded.
            pending.clear();
            tokio::time::sleep(Duration::from_millis(50)).await;
            // The connection may be what failed (PostgreSQL restarted): open a new one.
            if let Ok(fresh) = (self.connect)().await {
                D::close(std::mem::replace(connection, fresh)).await;
            }
        }
    }
}

/// The jobs at the head of `pending` that go in one transaction: at most
/// [`MAX_JOBS_PER_TRANSACTION`], all background ones or none.
fn take_batch<C>(pending: &mut VecDeque<Job<C>>) -> VecDeque<Job<C>> {
    let background = pending.front().map(|job| job.background);
    let alike = pending
        .iter()
        .take_while(|job| Some(job.background) == background)
        .take(MAX_JOBS_PER_TRANSACTION)
        .count();
    pending.drain(..alike).collect()
}

/// A background transaction handed to [`Background`]'s thread: the connection, the jobs, and
/// where to hand back the connection, the jobs not run and how the transaction went.
type Handoff<C> = (C, VecDeque<Job<C>>, oneshot::Sender<Handback<C>>);
type Handback<C> = (C, VecDeque<Job<C>>, std::result::Result<(), Failed>);

/// The thread that runs background transactions at the lowest priority ([`lower_priority`]).
/// It holds the connection only while it runs one; the writer's thread waits meanwhile, so
/// there is still one writer, and one transaction at a time. A transaction there yields (stops
/// and rolls back, its jobs answered with SQLite's interruption) once a write that is not
/// background is queued behind it: on a saturated machine the lowest priority's share of a
/// core made such a write wait for the whole transaction (0.3-0.7 s, docs/benchmarks.md). What
/// cannot stop (a statement between two progress checks, the commit) it still waits for.
struct Background<C> {
    handoffs: std::sync::mpsc::Sender<Handoff<C>>,
    /// Set while the transaction in flight is asked to yield.
    asked: Arc<AtomicBool>,
}

impl<C: Send + 'static> Background<C> {
    fn spawn<D: Dialect<Connection = C>>() -> std::io::Result<Self> {
        let (handoffs, received) = std::sync::mpsc::channel::<Handoff<C>>();
        let asked = Arc::new(AtomicBool::new(false));
        let yield_when = asked.clone();
        std::thread::Builder::new()
            .name("glassbox-bg".into())
            .spawn(move || {
                lower_priority();
                while let Ok((mut connection, mut batch, back)) = received.recv() {
                    D::yield_when(&connection, Some(yield_when.clone()));
                    // SQLite's jobs and statements are ready at once: nothing to wait on here.
                    let result =
                        futures::executor::block_on(commit_batch::<D>(&mut connection, &mut batch));
                    D::yield_when(&connection, None);
                    let _ = back.send((connection, batch, result));
                }
            })?;
        Ok(Background { handoffs, asked })
    }

    /// Runs `batch` in one transaction on the background thread, keeping what is queued
    /// meanwhile in `inbox` and asking the transaction to yield when that is (or already was)
    /// a write that is not background; `None` if that thread has stopped (the connection with
    /// it).
    async fn commit(
        &self,
        connection: C,
        batch: VecDeque<Job<C>>,
        inbox: &mut Inbox<C>,
    ) -> Option<Handback<C>> {
        self.asked.store(inbox.urgent_waiting(), Ordering::Relaxed);
        let (back, mut handback) = oneshot::channel();
        self.handoffs.send((connection, batch, back)).ok()?;
        loop {
            tokio::select! {
                back = &mut handback => {
                    return back.ok();
                }
                urgent = inbox.receive() => {
                    if urgent {
                        self.asked.store(true, Ordering::Relaxed);
                    }
                }
            }
        }
    }
}

/// The nice value of background transactions: the lowest priority a thread can have without
/// leaving the normal scheduler. `SCHED_IDLE` measured no better against the streams' tail
/// within the noise (docs/benchmarks.md) and gets a fifth of nice 19's share of a saturated
/// core (a 250-piece write took 1.2 s there against 0.3 s), which what cannot yield waits for.
#[cfg(any(target_os = "linux", test))]
pub const BACKGROUND_NICE: i32 = 19;

/// The time slice background transactions ask the scheduler for (its least, 0.1 ms; Linux
/// 6.12 and later, whose EEVDF scheduler lets a thread ask). A thread that wakes waits at most a
/// slice of the one running before it takes the core, and a thread at nice 19 that ran a slice
/// waits about 68 of them before it runs again: with the default slice (0.75 ms or more) a
/// background transaction asked to yield on a saturated machine took 0.2-0.3 s to see it.
#[cfg(target_os = "linux")]
const BACKGROUND_SLICE_NS: u64 = 100_000;

/// Lowers the calling thread's priority to [`BACKGROUND_NICE`] for good (an unprivileged thread
/// cannot raise it again, hence a thread of its own), with a time slice of
/// [`BACKGROUND_SLICE_NS`] where the kernel allows one. On Linux the nice value is the thread's.
#[cfg(target_os = "linux")]
fn lower_priority() {
    // Not in the libc crate's functions: the system call, with the first version of its
    // argument (48 bytes, `SCHED_ATTR_SIZE_VER0`), which every kernel since 3.14 reads.
    let attr = libc::sched_attr {
        size: std::mem::size_of::<libc::sched_attr>() as u32,
        sched_policy: libc::SCHED_OTHER as u32,
        sched_flags: 0,
        sched_nice: BACKGROUND_NICE,
        sched_priority: 0,
        sched_runtime: BACKGROUND_SLICE_NS,
        sched_deadline: 0,
        sched_period: 0,
    };
    // SAFETY: sched_setattr with pid 0 changes only the calling thread's policy, nice value and
    // slice; it reads `attr` (alive for the call) and writes nothing.
    let sliced = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const _, 0) } == 0;
    if sliced {
        return;
    }
    // SAFETY: setpriority with `who` 0 changes only the calling thread's nice value.
    let failed = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, BACKGROUND_NICE) } != 0;
    if failed {
        let error = std::io::Error::last_os_error();
        tracing::warn!(%error, "background writes run at the normal priority");
    }
}

/// Elsewhere the nice value is the process's: background writes keep the normal priority.
#[cfg(not(target_os = "linux"))]
fn lower_priority() {}

/// Runs queued jobs in one transaction and answers each; the error, if the transaction failed.
/// A job that fails ends the transaction early (its savepoint is rolled back, the others commit):
/// after some errors SQLite has rolled the whole transaction back, and a job run after that would
/// commit on its own. The jobs not run yet stay queued for the next transaction.
async fn commit_batch<D: Dialect>(
    connection: &mut D::Connection,
    batch: &mut VecDeque<Job<D::Connection>>,
) -> std::result::Result<(), Failed> {
    if let Err(error) = D::execute(connection, D::BEGIN_WITH_SAVEPOINT).await {
        // A BEGIN that went through before the savepoint failed is undone here.
        let _ = D::execute(connection, "ROLLBACK").await;
        return Err(Failed {
            began: false,
            ..Failed::of(&error)
        });
    }
    let mut answers = Vec::with_capacity(batch.len());
    let mut job_error = None;
    let mut only_relaxed = true;
    while let Some(job) = batch.pop_front() {
        only_relaxed &= job.relaxed;
        let (answer, failed) = (job.work)(&mut *connection).await;
        answers.push(answer);
        if failed.is_some() {
            job_error = failed;
            break;
        }
        if batch.is_empty() {
            // COMMIT releases the last job's savepoint.
            break;
        }
        if let Err(error) = D::execute(connection, "RELEASE job; SAVEPOINT job").await {
            // The next job has not run: it stays queued, and the commit says what happened.
            job_error = Some(Failed::of(&error));
            break;
        }
    }
    let commit = if only_relaxed {
        D::COMMIT_RELAXED
    } else {
        "COMMIT"
    };
    let failed = match D::execute(connection, commit).await {
        Ok(_) => None,
        Err(error) => {
            let _ = D::execute(connection, "ROLLBACK").await;
            // A commit that fails after a job failed fails for that job's reason (SQLite rolled
            // the transaction back when the disk filled up): say that, not "no transaction".
            Some(job_error.unwrap_or_else(|| Failed::of(&error)))
        }
    };
    for answer in answers {
        answer(failed.as_ref());
    }
    failed.map_or(Ok(()), Err)
}

/// Why a transaction (or a job in it) failed.
struct Failed {
    error: String,
    /// Whether the transaction had begun (its jobs ran and were answered).
    began: bool,
    /// Whether it stopped as a background transaction yielding ([`Background`]).
    interrupted: bool,
}

impl Failed {
    fn of(error: &Error) -> Self {
        Failed {
            error: error.to_string(),
            began: true,
            interrupted: error.is_interrupted(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer on a SQLite file of one table `t(v TEXT UNIQUE)`.
    async fn writer(dir: &std::path::Path) -> Writer<Sqlite> {
        let path = dir.join("writer.db");
        let setup = rusqlite::Connection::open(&path).and_then(|connection| {
            connection.execute_batch("CREATE TABLE t (v TEXT UNIQUE NOT NULL)")
        });
        assert!(setup.is_ok(), "{setup:?}");
        let connect: Connect<Sqlite> = Arc::new(move || {
            let opened = rusqlite::Connection::open(&path)
                .map_err(|error| sqlx::Error::Configuration(error.into()));
            Box::pin(std::future::ready(opened))
        });
        match Writer::start(connect).await {
            Ok(writer) => writer,
            Err(error) => panic!("writer: {error}"),
        }
    }

    /// What `select` reads of the file [`writer`] made in `dir`, once the writer has closed.
    fn stored(dir: &std::path::Path, select: &str) -> Vec<String> {
        rusqlite::Connection::open(dir.join("writer.db"))
            .and_then(|connection| {
                let mut statement = connection.prepare(select)?;
                let rows = statement.query_map([], |row| row.get(0))?;
                rows.collect()
            })
            .expect("read back")
    }

    fn insert(
        writer: &Writer<Sqlite>,
        values: &'static [&'static str],
    ) -> impl std::future::Future<Output = Result<()>> {
        let writer = writer.clone();
        async move {
            writer
                .write(move |connection| {
                    let done = values.iter().try_for_each(|value| {
                        connection
                            .execute("INSERT INTO t (v) VALUES (?1)", [value])
                            .map(drop)
                            .map_err(Error::from)
                    });
                    Box::pin(std::future::ready(done))
                })
                .await
        }
    }

    /// SQLite's writer with a relaxed commit that says so: it records `relaxed` in `commits`.
    struct Recording;

    impl Dialect for Recording {
        type Connection = rusqlite::Connection;
        const BEGIN_WITH_SAVEPOINT: &'static str = Sqlite::BEGIN_WITH_SAVEPOINT;
        const COMMIT_RELAXED: &'static str = "INSERT INTO commits VALUES ('relaxed'); COMMIT";
        const BACKGROUND_THREAD: bool = true;
        fn execute<'c>(
            connection: &'c mut rusqlite::Connection,
            sql: &'static str,
        ) -> BoxFuture<'c, Result<()>> {
            Sqlite::execute(connection, sql)
        }
        fn close(connection: rusqlite::Connection) -> BoxFuture<'static, ()> {
            Sqlite::close(connection)
        }
    }

    /// Holds the writer for 200 ms with a write (not a relaxed one) that has begun when this returns,
    /// so that what is queued next goes in one transaction after it.
    async fn behind_a_held_write<D: Dialect>(
        writer: &Writer<D>,
    ) -> tokio::task::JoinHandle<Result<()>> {
        let (began_tx, began) = oneshot::channel();
        let held = writer.clone();
        let task = tokio::spawn(async move {
            held.write(move |_| {
                let _ = began_tx.send(());
                std::thread::sleep(Duration::from_millis(200));
                Box::pin(std::future::ready(Ok(())))
            })
            .await
        });
        let _ = began.await;
        task
    }

    /// Only a transaction of relaxed jobs alone commits relaxed: one with any other job in it
    /// waits for the disk as every other commit does.
    #[tokio::test]
    async fn only_a_transaction_of_relaxed_jobs_commits_relaxed() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("commits.db");
        let setup = rusqlite::Connection::open(&path)
            .and_then(|connection| connection.execute_batch("CREATE TABLE commits (kind TEXT)"));
        assert!(setup.is_ok(), "{setup:?}");
        let connect: Connect<Recording> = Arc::new(move || {
            let opened = rusqlite::Connection::open(&path)
                .map_err(|error| sqlx::Error::Configuration(error.into()));
            Box::pin(std::future::ready(opened))
        });
        let writer: Writer<Recording> = Writer::start(connect).await.expect("writer");
        fn nothing(_: &mut rusqlite::Connection) -> BoxFuture<'_, Result<()>> {
            Box::pin(std::future::ready(Ok(())))
        }
        // One alone; two queued together; one queued with another write.
        assert!(writer.write_relaxed(nothing).await.is_ok());
        let held = behind_a_held_write(&writer).await;
        let (a, b) = tokio::join!(writer.write_relaxed(nothing), writer.write_relaxed(nothing));
        assert!(a.is_ok() && b.is_ok() && matches!(held.await, Ok(Ok(()))));
        let held = behind_a_held_write(&writer).await;
        let (a, b) = tokio::join!(writer.write_relaxed(nothing), writer.write(nothing));
        assert!(a.is_ok() && b.is_ok() && matches!(held.await, Ok(Ok(()))));
        let count = writer
            .write(|connection: &mut rusqlite::Connection| {
                let count = connection
                    .query_row("SELECT COUNT(*) FROM commits", [], |row| {
                        row.get::<_, i64>(0)
                    })
                    .map_err(Error::from);
                Box::pin(std::future::ready(count))
            })
            .await;
        assert_eq!(count.ok(), Some(2));
        writer.close().await;
    }

    /// A job that records in `t` its label, the nice value and the name of the thread it runs
    /// on.
    #[cfg(target_os = "linux")]
    fn record(
        label: &'static str,
    ) -> impl for<'c> FnOnce(&'c mut rusqlite::Connection) -> BoxFuture<'c, Result<()>> {
        move |connection| {
            // SAFETY: getpriority reads the calling thread's nice value.
            let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
            let thread = std::thread::current().name().unwrap_or("").to_owned();
            let done = connection
                .execute(
                    "INSERT INTO t (v) VALUES (?1)",
                    [format!("{label} {nice} {thread}")],
                )
                .map(drop)
                .map_err(Error::from);
            Box::pin(std::future::ready(done))
        }
    }

    /// Background jobs run at nice 19 on a thread of their own, the others on the writer's at
    /// the process's priority, all in the order they were queued, however they alternate.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn background_jobs_run_at_the_lowest_priority_in_the_queues_order() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let writer = writer(dir.path()).await;
        // SAFETY: getpriority reads the calling thread's nice value.
        let normal = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        let held = behind_a_held_write(&writer).await;
        let (a, b, c, d) = tokio::join!(
            writer.write_background(record("a")),
            writer.write(record("b")),
            writer.write_background(record("c")),
            writer.write_background(record("d")),
        );
        assert!(a.is_ok() && b.is_ok() && c.is_ok() && d.is_ok());
        assert!(matches!(held.await, Ok(Ok(()))));
        let after = writer.write(record("e")).await;
        assert!(after.is_ok(), "{after:?}");
        writer.close().await;
        let stored = stored(dir.path(), "SELECT v FROM t ORDER BY rowid");
        let low = format!("{BACKGROUND_NICE} glassbox-bg");
        let high = format!("{normal} glassbox-writer");
        assert_eq!(
            stored,
            [
                format!("a {low}"),
                format!("b {high}"),
                format!("c {low}"),
                format!("d {low}"),
                format!("e {high}"),
            ]
        );
    }

    /// A background transaction yields to a write queued behind it: its statement stops, its
    /// job hears SQLite's interruption, the write goes on, the store records no failure, and
    /// the next background write runs as usual. (Seen failing without the yield: the write
    /// waited for a statement that never ends.)
    #[tokio::test]
    async fn a_background_transaction_yields_to_a_write_queued_behind_it() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let writer = writer(dir.path()).await;
        let background = writer.clone();
        let endless = tokio::spawn(async move {
            background
                .write_background(|connection: &mut rusqlite::Connection| {
                    let counted = connection
                        .query_row(
                            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
                             SELECT count(*) FROM c",
                            [],
                            |row| row.get::<_, i64>(0),
                        )
                        .map_err(Error::from);
                    Box::pin(std::future::ready(counted))
                })
                .await
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        let written = tokio::time::timeout(Duration::from_secs(30), insert(&writer, &["a"])).await;
        assert!(matches!(written, Ok(Ok(()))), "{written:?}");
        let yielded = endless.await.expect("the background write's task");
        assert!(
            yielded.as_ref().is_err_and(Error::is_interrupted),
            "{yielded:?}"
        );
        assert_eq!(writer.failure(), None);
        let later = writer
            .write_background(|connection: &mut rusqlite::Connection| {
                let done = connection
                    .execute("INSERT INTO t (v) VALUES ('b')", [])
                    .map(drop)
                    .map_err(Error::from);
                Box::pin(std::future::ready(done))
            })
            .await;
        assert!(later.is_ok(), "{later:?}");
        writer.close().await;
        assert_eq!(stored(dir.path(), "SELECT v FROM t ORDER BY v"), ["a", "b"]);
    }

    /// Jobs queued together share a transaction; one that fails halfway leaves none of its rows
    /// and takes none of the others' with it, before or after it in the queue.
    #[tokio::test]
    async fn a_failing_job_undoes_only_its_own_writes() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let writer = writer(dir.path()).await;
        // Holds the writer while the three below queue up, so they go in one transaction.
        let hold = writer.write(|_| {
            std::thread::sleep(Duration::from_millis(200));
            Box::pin(std::future::ready(Ok(())))
        });
        let (held, first, failing, last) = tokio::join!(
            hold,
            insert(&writer, &["a", "b"]),
            // "c" goes in, then "a" again breaks the unique index.
            insert(&writer, &["c", "a"]),
            insert(&writer, &["d"]),
        );
        assert!(held.is_ok() && first.is_ok(), "{held:?} {first:?}");
        assert!(failing.is_err(), "{failing:?}");
        assert!(last.is_ok(), "{last:?}");
        let more = insert(&writer, &["e"]).await;
        assert!(more.is_ok(), "{more:?}");
        writer.close().await;
        let stored = stored(dir.path(), "SELECT v FROM t ORDER BY v");
        assert_eq!(stored, ["a", "b", "d", "e"]);
    }
}
