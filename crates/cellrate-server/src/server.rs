//! [`Server`]: the config in force, the storage and the counts, shared by every listener.

use crate::active::Active;
use crate::config::Config;
use crate::metrics::{self, Globals};
use crate::settings::Settings;
use crate::storage::embedded::SharedClock;
use crate::storage::redis::RedisStore;
use crate::storage::Store;
use arc_swap::ArcSwap;
use cellrate::MonotonicClock;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A rate limit server: cheap to clone (clones share everything).
///
/// ```no_run
/// use cellrate_server::{Config, Server, Settings};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let settings = Settings::for_dir("config");
/// let config = Config::load_dir(&settings.config_dir())?;
/// let server = Server::new(settings, config).await?;
/// server.serve(std::future::pending()).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

struct Inner {
    settings: Settings,
    store: Store,
    active: ArcSwap<Active>,
    globals: Globals,
}

impl Server {
    /// A server deciding on the exact monotonic clock, with buckets in this process, or in
    /// Redis when `settings.redis` is set (connecting to it first).
    pub async fn new(settings: Settings, config: Config) -> Result<Server, String> {
        Server::with_clock(settings, config, Arc::new(MonotonicClock::new())).await
    }

    /// [`Server::new`] on `clock` (a `ManualClock` in tests). Redis decides on its own clock.
    pub async fn with_clock(
        settings: Settings,
        config: Config,
        clock: SharedClock,
    ) -> Result<Server, String> {
        let store = match settings.redis {
            // Boxed, as `serve_on` is: the connection's future nests deep.
            Some(_) => Store::Redis(Box::pin(RedisStore::connect(&settings)).await?),
            None => Store::local(&settings, clock),
        };
        let active = Active::build(
            config,
            None,
            &store,
            settings.max_overrides,
            settings.detailed_metric_limit,
        );
        Ok(Server {
            inner: Arc::new(Inner {
                settings,
                store,
                active: ArcSwap::from_pointee(active),
                globals: Globals::default(),
            }),
        })
    }

    /// Puts `config` in force: rules whose quota is unchanged keep their buckets, the others
    /// start full (docs/design.md, *Reloads*). Counted as an applied reload.
    pub fn apply(&self, config: Config) {
        let inner = &self.inner;
        let previous = inner.active.load();
        let next = Active::build(
            config,
            Some(&previous),
            &inner.store,
            inner.settings.max_overrides,
            inner.settings.detailed_metric_limit,
        );
        inner.active.store(Arc::new(next));
        // Relaxed: a count read alone by a scrape; the swap above publishes the config.
        inner.globals.reloads_ok.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a reload refused because the new config is invalid.
    pub(crate) fn reload_failed(&self) {
        // Relaxed: a count read alone by a scrape.
        self.inner
            .globals
            .reloads_failed
            .fetch_add(1, Ordering::Relaxed);
    }

    /// The Prometheus text of the server's counts (what `GET /metrics` answers).
    pub fn metrics_text(&self) -> String {
        let redis = match &self.inner.store {
            Store::Redis(redis) => Some(redis.limiter().stats()),
            Store::Local { .. } => None,
        };
        let throttles = self.inner.store.throttles().map(|t| t.stats());
        metrics::render(
            &self.inner.globals,
            &self.active(),
            redis.as_ref(),
            throttles,
        )
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    pub(crate) fn active(&self) -> Arc<Active> {
        self.inner.active.load_full()
    }

    pub(crate) fn store(&self) -> &Store {
        &self.inner.store
    }

    pub(crate) fn globals(&self) -> &Globals {
        &self.inner.globals
    }
}
