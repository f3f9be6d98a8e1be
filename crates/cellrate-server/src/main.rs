//! `cellrate-server`: the flags, the logs, then the server until SIGTERM.

use cellrate_server::settings::LogFormat;
use cellrate_server::{termination, Config, Server, Settings};
use clap::Parser;
use std::process::ExitCode;
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let settings = Settings::parse();
    if let Some(dir) = &settings.validate {
        return match Config::load_dir_merging(dir, settings.merge_domains) {
            Ok(config) => {
                println!("{}: valid, {} rules", dir.display(), config.rules().len());
                ExitCode::SUCCESS
            }
            Err(errors) => {
                eprintln!("{errors}");
                ExitCode::FAILURE
            }
        };
    }
    let filter = EnvFilter::try_new(&settings.log_level).unwrap_or_else(|_| EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt().with_env_filter(filter);
    match settings.log_format {
        LogFormat::Json => logs.json().init(),
        LogFormat::Text => logs.init(),
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the runtime");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let dir = settings.config_dir();
        // A server for RESP alone needs no config: without --config and without the
        // reference server's runtime directory, it starts with no RLS rules.
        let config = if settings.config.is_none() && settings.resp_port.is_some() && !dir.is_dir() {
            tracing::info!(dir = %dir.display(), "no config directory: no RLS rules");
            Config::default()
        } else {
            match Config::load_dir_merging(&dir, settings.merge_domains) {
                Ok(config) => config,
                Err(errors) => {
                    tracing::error!(dir = %dir.display(), errors = %errors, "invalid config");
                    return ExitCode::FAILURE;
                }
            }
        };
        let server = match Server::new(settings, config).await {
            Ok(server) => server,
            Err(e) => {
                tracing::error!(error = %e, "cannot start");
                return ExitCode::FAILURE;
            }
        };
        match server.serve(termination()).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                tracing::error!(error = %e, "server failed");
                ExitCode::FAILURE
            }
        }
    })
}
