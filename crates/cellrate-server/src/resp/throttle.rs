//! `CL.THROTTLE key max_burst count_per_period period [quantity]`: redis-cell's command, its
//! reply `[limited, limit, remaining, retry_after, reset_after]` (`crate::throttle`).

use super::parse::Args;
use super::reply::Out;
use super::Context;
use crate::throttle::counts::{Outcome, Via};
use crate::throttle::{parse_args, ArgError};

/// Runs one call.
pub(crate) async fn run(ctx: &Context, args: Args<'_>, out: &mut Out) {
    let counts = &ctx.server.globals().throttle;
    // The arguments after the name, at most the five the command takes.
    let mut given: [&[u8]; 5] = [&[]; 5];
    let argc = args.len() - 1;
    if argc > given.len() {
        counts.call(Via::Resp, Outcome::Invalid);
        return out.error(&ArgError::Usage.text());
    }
    for (i, slot) in given.iter_mut().enumerate().take(argc) {
        *slot = args.get(i + 1);
    }
    match parse_args(&given[..argc]) {
        Ok((key, rate, quantity)) => {
            let reply = ctx.server.store().throttle(key, &rate, quantity).await;
            let outcome = if reply.limited {
                Outcome::Limited
            } else {
                Outcome::Allowed
            };
            counts.call(Via::Resp, outcome);
            out.integers(&reply.figures());
        }
        Err(e) => {
            counts.call(Via::Resp, Outcome::Invalid);
            out.error(&e.text());
        }
    }
}
