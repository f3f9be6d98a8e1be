//! Hot reload: the config directory is watched, and every change is read, checked and, if
//! valid and different from the config in force, applied at once (`Server::apply`). An invalid
//! change is logged with its errors and counted; the last good config stays in force.
//!
//! The directory is watched with its subdirectories (a Kubernetes ConfigMap swaps its
//! `..data` symlink inside it), and so is its parent (a swap of the directory's own symlink,
//! as `RUNTIME_ROOT` deployments do). Events come in bursts (an editor writes, renames and
//! changes modes); a reload waits until `--reload-debounce-ms` pass without a new one.

use crate::config::Config;
use crate::server::Server;
use notify::{RecursiveMode, Watcher};
use std::path::Path;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// Watches the server's config directory until `stop` turns true; the watcher lives as long
/// as the value returned.
pub(crate) fn watch(
    server: Server,
    stop: watch::Receiver<bool>,
) -> Option<notify::RecommendedWatcher> {
    let dir = server.settings().config_dir();
    let (tx, rx) = mpsc::unbounded_channel();
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if event.is_ok() {
            let _ = tx.send(());
        }
    });
    let mut watcher = match watcher {
        Ok(watcher) => watcher,
        Err(e) => {
            tracing::error!(error = %e, "cannot watch the config directory: no hot reload");
            return None;
        }
    };
    if let Err(e) = watcher.watch(&dir, RecursiveMode::Recursive) {
        tracing::error!(dir = %dir.display(), error = %e, "cannot watch the config directory: no hot reload");
        return None;
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        // Only for swaps of the directory itself; without it, changes inside are still seen.
        let _ = watcher.watch(parent, RecursiveMode::NonRecursive);
    }
    let debounce = Duration::from_millis(server.settings().reload_debounce_ms);
    tokio::spawn(reload_loop(server, dir.clone(), rx, stop, debounce));
    Some(watcher)
}

async fn reload_loop(
    server: Server,
    dir: std::path::PathBuf,
    mut events: mpsc::UnboundedReceiver<()>,
    mut stop: watch::Receiver<bool>,
    debounce: Duration,
) {
    // A change made between the config's first reading and the watch is seen here.
    reload(&server, &dir);
    loop {
        tokio::select! {
            event = events.recv() => if event.is_none() { return },
            _ = stop.changed() => return,
        }
        // Quiet for `debounce`: the burst is over.
        while let Ok(Some(())) = tokio::time::timeout(debounce, events.recv()).await {}
        reload(&server, &dir);
    }
}

/// Reads the directory and applies it if it changed; logs and counts a failure.
fn reload(server: &Server, dir: &Path) {
    let files = match Config::read_dir(dir) {
        Ok(files) => files,
        Err(errors) => {
            server.reload_failed();
            tracing::error!(errors = %errors, "config reload failed: the last good config stays in force");
            return;
        }
    };
    if server.active().config.sources == files {
        return;
    }
    let named: Vec<(&str, &str)> = files
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    match Config::from_files_merging(&named, server.settings().merge_domains) {
        Ok(config) => {
            let rules = config.rules().len();
            server.apply(config);
            tracing::info!(rules, "config reloaded");
        }
        Err(errors) => {
            server.reload_failed();
            tracing::error!(errors = %errors, "config reload failed: the last good config stays in force");
        }
    }
}
