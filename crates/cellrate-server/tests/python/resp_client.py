"""Calls a cellrate-server's RESP port with the Python `redis` package, as a redis-cell user's
application would, for the Rust test that drives it (tests/resp_clients.rs).

First it checks the connection handshakes the package makes (RESP2 with AUTH, RESP3 with
HELLO ... AUTH, CLIENT SETINFO) and how it raises the server's errors. Then it reads commands,
one JSON object per line on stdin, and prints each result as one JSON line on stdout:
{"protocol": 2 or 3, "args": [...]} runs one command on that connection; {"pipeline": [[...],
...]} runs a pipeline of them on the RESP2 one. The test advances the server's clock between
lines and checks every reply against an exact bucket.
"""
import argparse
import json
import sys

import redis


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--password", required=True)
    a = p.parse_args()
    kw = dict(host="127.0.0.1", port=a.port, socket_timeout=30)
    clients = {
        2: redis.Redis(password=a.password, protocol=2, **kw),
        3: redis.Redis(password=a.password, protocol=3, **kw),
    }
    for client in clients.values():
        assert client.ping() is True
    try:
        redis.Redis(password="wrong", **kw).ping()
        raise SystemExit("a wrong password was taken")
    except redis.exceptions.AuthenticationError:
        pass
    try:
        redis.Redis(**kw).execute_command("CL.THROTTLE", "k", 1, 1, 1)
        raise SystemExit("a command was run without AUTH")
    except redis.exceptions.AuthenticationError:
        pass
    try:
        clients[2].execute_command("CL.THROTTLE", "k", 1, 0, 1)
        raise SystemExit("a zero rate was taken")
    except redis.exceptions.ResponseError as e:
        assert str(e) == "Cell error: Store error: Zero rates are not supported", str(e)
    print("ready", flush=True)
    for line in sys.stdin:
        step = json.loads(line)
        if "pipeline" in step:
            pipe = clients[2].pipeline(transaction=False)
            for args in step["pipeline"]:
                pipe.execute_command(*args)
            result = pipe.execute()
        else:
            result = clients[step["protocol"]].execute_command(*step["args"])
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
