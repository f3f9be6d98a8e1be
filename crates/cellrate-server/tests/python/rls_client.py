"""Drives a running cellrate-server as Envoy would: grpcio with the xds-protos stubs of
envoy.service.ratelimit.v3. Every field of each answer is checked against an exact GCRA bucket
(docs/design.md, section 1), on the server's real clock.

Time: the limits here earn a token every 36 s or more, so a bucket's remaining count is exact as
long as the whole run takes less than 36 s (checked), and a time until reset is known up to the
time elapsed since the bucket's first spend, which the script measures on its own monotonic clock
around every call: each duration is checked within [exact - elapsed, exact]. A loaded machine
makes the run slower, which widens the window it measures, never the check's error.
"""
import argparse
import os
import sys
import threading
import time
import urllib.request

import grpc
from envoy.extensions.common.ratelimit.v3 import ratelimit_pb2 as rl
from envoy.service.ratelimit.v3 import rls_pb2, rls_pb2_grpc

OK, OVER = rls_pb2.RateLimitResponse.OK, rls_pb2.RateLimitResponse.OVER_LIMIT
Unit = rls_pb2.RateLimitResponse.RateLimit
START = time.monotonic()
checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        print(f"FAILED: {what}", file=sys.stderr)
        sys.exit(1)


def desc(*entries, hits=None, limit=None):
    d = rl.RateLimitDescriptor(entries=[rl.RateLimitDescriptor.Entry(key=k, value=v) for k, v in entries])
    if hits is not None:
        d.hits_addend.value = hits
    if limit is not None:
        d.limit.requests_per_unit, d.limit.unit = limit
    return d


def secs(duration):
    return duration.seconds + duration.nanos / 1e9


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--grpc-port", type=int, required=True)
    p.add_argument("--http-port", type=int, required=True)
    p.add_argument("--config-dir", required=True)
    a = p.parse_args()
    stub = rls_pb2_grpc.RateLimitServiceStub(grpc.insecure_channel(f"127.0.0.1:{a.grpc_port}"))

    def call(*descriptors, domain="edge", hits=0):
        return stub.ShouldRateLimit(
            rls_pb2.RateLimitRequest(domain=domain, descriptors=list(descriptors), hits_addend=hits),
            timeout=10,
        )

    # per-ip: 60 per hour (a token every 60 s), burst 5.
    t0 = time.monotonic()
    for k in range(1, 6):
        r = call(desc(("remote_address", "10.0.0.1")))
        elapsed = time.monotonic() - t0
        s = r.statuses[0]
        check(r.overall_code == OK and s.code == OK, f"call {k} admitted")
        check(s.limit_remaining == 5 - k, f"remaining {s.limit_remaining} after {k}")
        check((s.current_limit.requests_per_unit, s.current_limit.unit, s.current_limit.name) == (60, Unit.HOUR, "per-ip"), "current_limit")
        check(k * 60 - elapsed - 1e-3 <= secs(s.duration_until_reset) <= k * 60, f"reset {secs(s.duration_until_reset)} after {k}")
    r = call(desc(("remote_address", "10.0.0.1")))
    elapsed = time.monotonic() - t0
    s = r.statuses[0]
    check(r.overall_code == OVER and s.code == OVER and s.limit_remaining == 0, "6th refused")
    # The retry is 60 s less the time since the first spend, rounded up to whole seconds.
    check(int(60 - elapsed) <= secs(s.duration_until_reset) <= 60 and s.duration_until_reset.nanos == 0, f"retry {s.duration_until_reset}")
    check(("RateLimit-Remaining", "0") in [(h.key, h.value) for h in r.response_headers_to_add], "draft headers")

    # All or nothing: a request over one limit spends nothing on the other.
    r = call(desc(("tenant", "t1")))
    check(r.statuses[0].limit_remaining == 99, "tenant 99")
    r = call(desc(("remote_address", "10.0.0.1")), desc(("tenant", "t1")))
    check(r.overall_code == OVER and [s.code for s in r.statuses] == [OVER, OK], "refused as a whole")
    check(r.statuses[1].limit_remaining == 99, "the tenant's status: what it holds, nothing spent")
    r = call(desc(("tenant", "t1")))
    check(r.statuses[0].limit_remaining == 98, "the refused request spent nothing")

    # Nested rule, period rule, costs.
    r = call(desc(("tenant", "t2"), ("plan", "free")))
    check((r.statuses[0].limit_remaining, r.statuses[0].current_limit.name) == (9, "free"), "nested rule")
    r = call(desc(("path", "/login")))
    cl = r.statuses[0].current_limit
    check((cl.requests_per_unit, cl.unit, r.statuses[0].limit_remaining) == (20, Unit.MINUTE, 9), "10 per 30 s is 20 per MINUTE")
    r = call(desc(("remote_address", "10.0.0.2")), hits=3)
    check(r.statuses[0].limit_remaining == 2, "request hits_addend 3")
    r = call(desc(("remote_address", "10.0.0.3"), hits=4), desc(("tenant", "t3")), hits=2)
    check([s.limit_remaining for s in r.statuses] == [1, 98], "each descriptor its own hits_addend")
    r = call(desc(("remote_address", "10.0.0.4"), hits=6))
    check(r.overall_code == OVER and r.statuses[0].limit_remaining == 5, "a cost above the burst never passes")

    # Shadow, unlimited, no rule, override.
    r1, r2 = call(desc(("shadow", "s"))), call(desc(("shadow", "s")))
    check(r1.statuses[0].code == OK and r2.statuses[0].code == OVER and r2.overall_code == OK, "shadow reports, never refuses")
    r = call(desc(("vip", "x")))
    check(r.statuses[0].code == OK and r.statuses[0].limit_remaining == 2**32 - 1 and not r.statuses[0].HasField("current_limit"), "unlimited")
    r = call(desc(("nobody", "x")))
    check(r.overall_code == OK and not r.statuses[0].HasField("current_limit") and r.statuses[0].limit_remaining == 0, "no rule")
    r = call(desc(("nobody", "x")), domain="not-configured")
    check(r.overall_code == OK, "unknown domain")
    for left in (1, 0):
        r = call(desc(("remote_address", "10.0.0.9"), limit=(2, Unit.MINUTE)))
        cl = r.statuses[0].current_limit
        check((r.overall_code, cl.requests_per_unit, cl.unit, r.statuses[0].limit_remaining) == (OK, 2, Unit.MINUTE, left), "override")
    check(call(desc(("remote_address", "10.0.0.9"), limit=(2, Unit.MINUTE))).overall_code == OVER, "override exhausted")

    # Bad input: INVALID_ARGUMENT, and the server still answers.
    for bad, why in [
        (rls_pb2.RateLimitRequest(domain="", descriptors=[desc(("a", "b"))]), "empty domain"),
        (rls_pb2.RateLimitRequest(domain="edge"), "no descriptors"),
        (rls_pb2.RateLimitRequest(domain="edge", descriptors=[desc(("a", "b"))] * 1000), "1000 descriptors"),
        (rls_pb2.RateLimitRequest(domain="edge", descriptors=[desc(("a", "x" * 4000))]), "a 4000-byte value"),
        (rls_pb2.RateLimitRequest(domain="edge", descriptors=[desc(("a", "b"), limit=(1, 42))]), "an unknown unit"),
    ]:
        try:
            stub.ShouldRateLimit(bad, timeout=10)
            check(False, f"{why} accepted")
        except grpc.RpcError as e:
            check(e.code() == grpc.StatusCode.INVALID_ARGUMENT, f"{why}: {e.code()}")

    # Envoy sends concurrently: 8 threads on one fresh key of burst 5 admit exactly 5.
    admitted = []
    def hammer():
        for _ in range(25):
            admitted.append(call(desc(("remote_address", "10.9.9.9"))).overall_code == OK)
    threads = [threading.Thread(target=hammer) for _ in range(8)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    check(sum(admitted) == 5, f"{sum(admitted)} admitted of 200 concurrent calls")

    check(time.monotonic() - START < 36, "the run took less than one token's interval")

    # Hot reload: an invalid file is refused and the old rules stay; a valid change applies.
    def metric(name):
        text = urllib.request.urlopen(f"http://127.0.0.1:{a.http_port}/metrics", timeout=10).read().decode()
        return next((float(l.split()[-1]) for l in text.splitlines() if l.startswith(name + " ")), None), text
    def wait(name, want):
        deadline = time.monotonic() + 20
        while (metric(name)[0] or 0) < want:
            check(time.monotonic() < deadline, f"{name} never reached {want}")
            time.sleep(0.02)
    path = os.path.join(a.config_dir, "edge.yaml")
    original = open(path).read()
    def replace(text):
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.rename(path + ".tmp", path)
    replace("domain: edge\ndescriptors:\n  - key: tenant\n    rate_limit: {unit: fortnight}\n")
    wait('cellrate_rls_reloads_total{result="failed"}', 1)
    check(call(desc(("tenant", "t9"))).statuses[0].current_limit.requests_per_unit == 100, "the last good config stays")
    replace(original.replace("requests_per_unit: 100}", "requests_per_unit: 200}"))
    wait('cellrate_rls_reloads_total{result="applied"}', 1)
    check(call(desc(("tenant", "t9"))).statuses[0].current_limit.requests_per_unit == 200, "the new config applies")
    r = call(desc(("remote_address", "10.0.0.1")))
    check(r.overall_code == OVER, "an unchanged rule keeps its buckets across a reload")

    _, text = metric("x")
    lines = [l for l in text.splitlines() if l.startswith("cellrate_rls_decisions_total{")]
    check(any('domain="edge",rule="per-ip",outcome="over_limit"' in l for l in lines), "decisions by domain and rule")
    check(not any("10.0.0" in l for l in text.splitlines()), "no client value in a label")
    ready = urllib.request.urlopen(f"http://127.0.0.1:{a.http_port}/readyz", timeout=10).status
    check(ready == 200, "ready")
    print(f"rls_client.py: all {checks} checks hold")


if __name__ == "__main__":
    main()
