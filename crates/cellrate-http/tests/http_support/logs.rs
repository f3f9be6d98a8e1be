//! The log lines of a test: a process-wide `tracing` subscriber that hands each event to the
//! [`Logs`] capturing on the thread it happens on (a current-thread runtime's, whose tasks all
//! run there), if any. One global subscriber rather than one set per thread: `tracing` caches
//! whether a call site is enabled, and a scoped subscriber can find a call site cached as off
//! by a test running beside it on another thread.

use std::cell::RefCell;
use std::fmt::Debug;
use std::sync::{Arc, Mutex, Once};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// A current-thread runtime, whose tasks run on the thread that captures.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The events logged on a thread while a [`Logs`] captured there.
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<(Level, String)>>>);

thread_local! {
    /// The logs capturing on this thread.
    static CAPTURING: RefCell<Option<Logs>> = const { RefCell::new(None) };
}

/// Puts back the logs that captured before, even if the test panics.
struct Restore(Option<Logs>);

impl Drop for Restore {
    fn drop(&mut self) {
        let previous = self.0.take();
        CAPTURING.with(|c| *c.borrow_mut() = previous);
    }
}

impl Logs {
    /// Runs `f` with these logs capturing the events of this thread.
    pub fn capture<T>(&self, f: impl FnOnce() -> T) -> T {
        static INSTALL: Once = Once::new();
        INSTALL.call_once(|| {
            tracing::subscriber::set_global_default(ToCapturing)
                .expect("no other global subscriber in the tests");
        });
        let previous = CAPTURING.with(|c| c.replace(Some(self.clone())));
        let _restore = Restore(previous);
        f()
    }

    /// The messages logged at `level` that contain `part`.
    pub fn lines(&self, level: Level, part: &str) -> Vec<String> {
        let lines = self.0.lock().unwrap();
        lines
            .iter()
            .filter(|(l, m)| *l == level && m.contains(part))
            .map(|(_, m)| m.clone())
            .collect()
    }
}

/// The global subscriber: every event to the logs capturing on its thread.
struct ToCapturing;

struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl Subscriber for ToCapturing {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        CAPTURING.with(|c| {
            if let Some(logs) = &*c.borrow() {
                let mut message = Message(String::new());
                event.record(&mut message);
                let level = *event.metadata().level();
                logs.0.lock().unwrap().push((level, message.0));
            }
        });
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}
