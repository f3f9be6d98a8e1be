//! Which command runs: its name matched without regard to case, its number of arguments
//! checked against its arity (`introspection::COMMANDS`), and, when a password is set, nothing
//! but `AUTH`, `HELLO`, `QUIT` and `RESET` before it is given. Errors are Redis's own texts.

use super::introspection;
use super::parse::Args;
use super::reply::Out;
use super::{session, throttle, Context, Session};

/// Runs one command of `session`, its reply into `out`.
pub(crate) async fn run(ctx: &Context, session: &mut Session, args: Args<'_>, out: &mut Out) {
    let Some(spec) = introspection::find(args.get(0)) else {
        unknown(args, out);
        return;
    };
    if !session.authenticated && !matches!(spec.name, "auth" | "hello" | "quit" | "reset") {
        out.error("NOAUTH Authentication required.");
        return;
    }
    if !spec.takes(args.len()) {
        wrong_arity(spec.name, out);
        return;
    }
    match spec.name {
        "cl.throttle" => throttle::run(ctx, args, out).await,
        "ping" => match args.len() {
            1 => out.simple("PONG"),
            2 => out.bulk(args.get(1)),
            _ => wrong_arity("ping", out),
        },
        "echo" => out.bulk(args.get(1)),
        "quit" => {
            session.quit = true;
            out.simple("OK");
        }
        "command" => introspection::command(args, out),
        "config" => introspection::config(ctx, args, out),
        "info" => introspection::info(ctx, out),
        _ => session::run(ctx, session, spec, args, out),
    }
}

/// `ERR wrong number of arguments for 'NAME' command`.
pub(crate) fn wrong_arity(name: &str, out: &mut Out) {
    out.error(&format!(
        "ERR wrong number of arguments for '{name}' command"
    ));
}

/// Redis's reply to a command it does not know: the name and the first arguments, each
/// shortened, 128 bytes of them in all.
fn unknown(args: Args<'_>, out: &mut Out) {
    let shown = |bytes: &[u8], max: usize| {
        String::from_utf8_lossy(&bytes[..bytes.len().min(max)]).into_owned()
    };
    let mut rest = String::new();
    for i in 1..args.len() {
        if rest.len() >= 128 {
            break;
        }
        let room = 128 - rest.len();
        rest.push_str(&format!("'{}' ", shown(args.get(i), room)));
    }
    out.error(&format!(
        "ERR unknown command '{}', with args beginning with: {rest}",
        shown(args.get(0), 128)
    ));
}
