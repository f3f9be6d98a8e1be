//! Scripts on one node: a call (after `ASKING` for a slot being imported), pipelines chunked
//! to fit the deadline, and the script loaded again after `NOSCRIPT`. The single-server
//! connection and the Cluster both send through these.

use super::error::Error;
use super::node::Node;
use super::options::RedisOptions;
use redis::{Client, ErrorKind, Script, ServerErrorKind, Value};
use std::sync::Arc;
use std::time::Duration;

/// One script call: the key and the arguments after it.
#[derive(Clone)]
pub(crate) struct Call {
    pub(crate) key: String,
    pub(crate) args: [i64; 7],
}

/// How a batch is sent: the deadline of each chunk and the most calls in one chunk.
#[derive(Clone, Copy)]
pub(crate) struct Pace {
    pub(crate) deadline: Duration,
    pub(crate) chunk: usize,
}

/// A client for `url` with the options' TLS certificates, if any (`rediss://` URLs).
pub(crate) fn client(url: &str, options: &RedisOptions) -> Result<Client, Error> {
    match options.tls_certificates() {
        Some(certificates) => Ok(Client::build_with_tls(url, certificates)?),
        None => Ok(Client::open(url)?),
    }
}

pub(crate) fn needs_runtime(what: &str) -> Result<(), Error> {
    if tokio::runtime::Handle::try_current().is_err() {
        let why = format!("{what} must be called within a Tokio runtime");
        return Err(redis::RedisError::from((
            ErrorKind::InvalidClientConfig,
            "no Tokio runtime",
            why,
        ))
        .into());
    }
    Ok(())
}

/// One script call on `node`, after `ASKING` when `asking` (a slot being imported there).
pub(crate) async fn run_script(
    node: &Node,
    script: &Arc<Script>,
    keys: &[String],
    args: &[i64],
    deadline: Duration,
    asking: bool,
) -> Result<Value, Error> {
    if !asking {
        let (script, keys, args) = (Arc::clone(script), keys.to_vec(), args.to_vec());
        return node
            .run(deadline, move |mut c| async move {
                let mut invocation = script.prepare_invoke();
                for key in &keys {
                    invocation.key(key);
                }
                invocation.arg(&args[..]);
                invocation.invoke_async::<Value>(&mut c).await
            })
            .await;
    }
    let eval = Eval {
        script,
        keys,
        args: args.to_vec(),
    };
    let mut replies = run_asking(node, std::slice::from_ref(&eval), deadline).await?;
    into_result(replies.pop().unwrap_or(Value::Nil))
}

/// One EVALSHA to send after `ASKING`: the script, its keys and its arguments.
pub(crate) struct Eval<'a> {
    pub(crate) script: &'a Arc<Script>,
    pub(crate) keys: &'a [String],
    pub(crate) args: Vec<i64>,
}

/// `evals` on `node` in one pipeline, each after `ASKING` (which holds for the next command
/// only), within `deadline`: each one's reply or error reply. The scripts of those answered
/// NOSCRIPT (they did not run) are loaded; if the last one was, all are sent once more, so
/// evals before the last must be safe to run twice.
pub(crate) async fn run_asking(
    node: &Node,
    evals: &[Eval<'_>],
    deadline: Duration,
) -> Result<Vec<Value>, Error> {
    let replies = asking_pipeline(node, evals, deadline).await?;
    let mut loaded: Vec<&str> = Vec::new();
    for (eval, reply) in evals.iter().zip(&replies) {
        let hash = eval.script.get_hash();
        if is_noscript(reply) && !loaded.contains(&hash) {
            load(node, eval.script, deadline).await?;
            loaded.push(hash);
        }
    }
    match replies.last() {
        Some(last) if is_noscript(last) => asking_pipeline(node, evals, deadline).await,
        _ => Ok(replies),
    }
}

async fn asking_pipeline(
    node: &Node,
    evals: &[Eval<'_>],
    deadline: Duration,
) -> Result<Vec<Value>, Error> {
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    for eval in evals {
        pipe.cmd("ASKING").ignore();
        let evalsha = pipe
            .cmd("EVALSHA")
            .arg(eval.script.get_hash())
            .arg(eval.keys.len());
        for key in eval.keys {
            evalsha.arg(key);
        }
        evalsha.arg(&eval.args[..]);
    }
    let replies: Vec<Value> = node
        .run(deadline, move |mut c| async move {
            pipe.query_async::<Vec<Value>>(&mut c).await
        })
        .await?;
    if replies.len() != evals.len() {
        let why = format!(
            "{} replies to {} calls after ASKING",
            replies.len(),
            evals.len()
        );
        return Err(Error::UnexpectedReply(why));
    }
    Ok(replies)
}

/// A reply as the client gives one for a single command: an error reply as an error.
pub(crate) fn into_result(reply: Value) -> Result<Value, Error> {
    match reply {
        Value::ServerError(e) => Err(Error::from(redis::RedisError::from(e))),
        reply => Ok(reply),
    }
}

/// `SCRIPT LOAD` of `script` on `node`.
async fn load(node: &Node, script: &Arc<Script>, deadline: Duration) -> Result<(), Error> {
    let script = Arc::clone(script);
    node.run(deadline, move |mut c| async move {
        script.load_async(&mut c).await.map(|_| ())
    })
    .await
}

/// The calls on one node as EVALSHA pipelines of at most `pace.chunk`, one after another
/// (each call after `ASKING` when `asking`: a slot being imported there), errors kept per
/// call. Calls the server answered NOSCRIPT (they did not run) are sent again once, right
/// after the script is loaded, before the next chunk.
pub(crate) async fn run_chunks(
    node: &Node,
    script: &Arc<Script>,
    calls: &[Call],
    pace: Pace,
    asking: bool,
) -> Vec<Result<Value, Error>> {
    let mut replies = Vec::with_capacity(calls.len());
    let mut failed: Option<String> = None;
    for chunk in calls.chunks(pace.chunk.max(1)) {
        if let Some(why) = &failed {
            replies.extend(chunk.iter().map(|_| {
                Err(Error::Unavailable(format!(
                    "not sent: an earlier part of this batch failed ({why})"
                )))
            }));
            continue;
        }
        let mut answers = pipeline(node, script, chunk, pace.deadline, asking).await;
        let missing: Vec<usize> = (0..answers.len())
            .filter(|&i| matches!(&answers[i], Ok(reply) if is_noscript(reply)))
            .collect();
        if !missing.is_empty() {
            let again: Vec<Call> = missing.iter().map(|&i| chunk[i].clone()).collect();
            let resent = match load(node, script, pace.deadline).await {
                Ok(()) => pipeline(node, script, &again, pace.deadline, asking).await,
                Err(e) => again.iter().map(|_| Err(e.clone())).collect(),
            };
            for (i, answer) in missing.into_iter().zip(resent) {
                answers[i] = answer;
            }
        }
        if let Some(Err(e)) = answers.iter().find(|a| a.is_err()) {
            failed = Some(e.to_string());
        }
        replies.extend(answers);
    }
    replies
}

/// One pipeline of `calls` (each after `ASKING` when `asking`), within `deadline`: a reply (or
/// error reply) per call, or the pipeline's error for every call.
async fn pipeline(
    node: &Node,
    script: &Script,
    calls: &[Call],
    deadline: Duration,
    asking: bool,
) -> Vec<Result<Value, Error>> {
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    for call in calls {
        if asking {
            pipe.cmd("ASKING").ignore();
        }
        pipe.cmd("EVALSHA")
            .arg(script.get_hash())
            .arg(1)
            .arg(&call.key)
            .arg(&call.args[..]);
    }
    let answer = node
        .run(deadline, move |mut c| async move {
            pipe.query_async::<Vec<Value>>(&mut c).await
        })
        .await;
    match answer {
        Ok(values) if values.len() == calls.len() => values.into_iter().map(Ok).collect(),
        Ok(values) => {
            let why = format!("{} replies to {} calls", values.len(), calls.len());
            calls
                .iter()
                .map(|_| Err(Error::UnexpectedReply(why.clone())))
                .collect()
        }
        // Every call of the pipeline shares its fate.
        Err(e) => calls.iter().map(|_| Err(e.clone())).collect(),
    }
}

pub(crate) fn is_noscript(reply: &Value) -> bool {
    matches!(reply, Value::ServerError(e) if e.kind() == Some(ServerErrorKind::NoScript))
}
