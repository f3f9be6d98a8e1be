//! `cellrate-server`: the flags, the logs, then the server.

use cellrate_server::{Config, Settings};
use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let settings = Settings::parse();
    if let Some(dir) = &settings.validate {
        return match Config::load_dir(dir) {
            Ok(config) => {
                println!("{}: valid ({} rules)", dir.display(), config.rules().len());
                ExitCode::SUCCESS
            }
            Err(errors) => {
                eprintln!("{errors}");
                ExitCode::FAILURE
            }
        };
    }
    ExitCode::SUCCESS
}
