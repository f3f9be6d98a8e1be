//! A call of several keys on a slot being migrated, which the importing node refuses
//! (`TRYAGAIN`) while it lacks some of the keys: Redis runs a script of several keys there only
//! when it holds every one. A key neither node holds is an absent bucket (no node can make it
//! while the slot migrates: the source sends every command for a key it lacks on by `ASK`), so
//! writing, on the importing node, what its absence stands for changes no decision and lets
//! the script run there. A key the source still holds is waited for: the operator's `MIGRATE`
//! moves it.

use crate::error::Error;
use crate::node::Node;
use crate::node_script::{into_result, is_noscript, run_asking, Eval};
use redis::{Script, Value};
use std::sync::Arc;
use std::time::Duration;

/// Whether the node migrating the slot (`source`) holds none of `keys`, asked with one `GET`
/// each: a value (or a `WRONGTYPE` reply) is a key it holds; `ASK` (the key is not there, the
/// slot migrating), `MOVED` (the slot moved on) or nothing is one it does not. `GET`, because
/// the scripts read with it, so any user the limiter runs as may send it.
pub(super) async fn source_holds_none(
    source: &Node,
    keys: &[String],
    deadline: Duration,
) -> Result<bool, Error> {
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    for key in keys {
        pipe.cmd("GET").arg(key);
    }
    let replies: Vec<Value> = source
        .run(deadline, move |mut c| async move {
            pipe.query_async::<Vec<Value>>(&mut c).await
        })
        .await?;
    for reply in replies {
        match reply {
            Value::Nil => {}
            Value::ServerError(e) => match e.code() {
                "ASK" | "MOVED" => {}
                "WRONGTYPE" => return Ok(false),
                _ => return Err(into_result(Value::ServerError(e)).unwrap_err()),
            },
            _ => return Ok(false),
        }
    }
    Ok(true)
}

/// `script` on `keys` at `node`, which imports their slot, after `first_sight` has written
/// each key it lacks as its absence stands for: one pipeline, every command after `ASKING`.
/// `first_sight` takes a key, its index among `keys` (from 1) and `script`'s arguments.
pub(super) async fn run_after_first_sights(
    node: &Node,
    first_sight: &Arc<Script>,
    script: &Arc<Script>,
    keys: &[String],
    args: &[i64],
    deadline: Duration,
) -> Result<Value, Error> {
    let mut evals: Vec<Eval<'_>> = Vec::with_capacity(keys.len() + 1);
    for (i, key) in keys.iter().enumerate() {
        let mut indexed = Vec::with_capacity(args.len() + 1);
        indexed.push(i as i64 + 1);
        indexed.extend_from_slice(args);
        evals.push(Eval {
            script: first_sight,
            keys: std::slice::from_ref(key),
            args: indexed,
        });
    }
    evals.push(Eval {
        script,
        keys,
        args: args.to_vec(),
    });
    let mut replies = run_asking(node, &evals, deadline).await?;
    let call = replies.pop().unwrap_or(Value::Nil);
    // A first sight refused (out of memory, an ACL) left its key absent: the call met
    // TRYAGAIN, and the refusal says why. (One that met NOSCRIPT has its script loaded now,
    // and the call is sent again after TRYAGAIN's pause.)
    if let Some(refused) = replies
        .into_iter()
        .find(|r| matches!(r, Value::ServerError(_)) && !is_noscript(r))
    {
        if matches!(&call, Value::ServerError(e) if e.code() == "TRYAGAIN") {
            return into_result(refused);
        }
    }
    into_result(call)
}
