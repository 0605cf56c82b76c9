#!/usr/bin/env python3
"""A benchmark, not a test: latency of egm serve's pages and the wall time of
C concurrent requests, against a running server.

  bench_serve.py URL [REQUESTS=200] [CONCURRENCY=200]

For each route: REQUESTS GETs, CONCURRENCY at a time (one thread each, a fresh
connection per request); prints the median, 95th percentile and maximum
latency, the wall time and the requests per second. results/BENCHMARKS.md has
the numbers and the exact command.
"""
import statistics
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

ROUTES = ["/", "/sweep/fixture", "/sweep/fixture/cell/ega_mope-s1", "/sweep/fixture/paper.csv",
          "/query.json?sql=SELECT%20count(*)%20FROM%20metrics"]


def one(url):
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=300) as r:
        r.read()
        assert r.status == 200, r.status
    return time.perf_counter() - t0


def main():
    base = sys.argv[1].rstrip("/")
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    c = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    print(f"{'route':<40} {'n':>4} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'wall s':>7} {'req/s':>7}")
    for route in ROUTES:
        one(base + route)  # warm
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=c) as pool:
            lat = sorted(pool.map(lambda _: one(base + route), range(n)))
        wall = time.perf_counter() - t0
        p95 = lat[min(len(lat) - 1, int(0.95 * len(lat)))]
        print(f"{route[:40]:<40} {n:>4} {statistics.median(lat) * 1e3:>8.1f} {p95 * 1e3:>8.1f} "
              f"{lat[-1] * 1e3:>8.1f} {wall:>7.2f} {n / wall:>7.1f}")


if __name__ == "__main__":
    main()
