"""Targets 4 and 6: OpenAIEngine vs a batch-of-50 aiohttp client; resident memory of a long run.

The fake OpenAI server (``tests/support/fake_openai.py``, 100 ms per answer) runs in its own
process so client and server do not share one GIL; its stats (max in flight) come back over
a pipe. Target 4: 20,000 prompts, ``concurrent_requests=256`` vs fixed batches of 50 (the
original system), same request bodies. Target 6: domain-sized calls (27,750 prompts each)
through the cached engine, the way the flow runs them, in a fresh process; resident memory
after each domain, extrapolated to ten domains (277,500 prompts) when fewer were run.
Usage: ``python -m bench.api_client [--quick] [--prompts 20000] [--domains 2]``.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import common

DOMAIN_PROMPTS = 27_750  # 500 respondents x ~55 questions: one domain of a full run


class Server:
    """The fake server in a child process: ``url``, ``stats()``, ``reset()``, ``stop()``."""

    def __init__(self, latency_ms: float) -> None:
        command = [common.PY, "-m", "bench.api_client", "--serve", str(latency_ms)]
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     cwd=common.ROOT)
        self.url = self.proc.stdout.readline().strip()

    def _ask(self, command: str) -> dict:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def stats(self) -> dict:
        return self._ask("stats")

    def reset(self) -> dict:
        return self._ask("reset")

    def cpu_s(self) -> float:
        """CPU seconds (user + system) the server process has used: it shares the cores with the client."""
        import psutil

        times = psutil.Process(self.proc.pid).cpu_times()
        return times.user + times.system

    def stop(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(30)


def serve(latency_ms: float) -> None:
    from tests.support.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer(latency_ms=latency_ms) as server:
        print(server.url, flush=True)
        for line in sys.stdin:
            if line.strip() == "reset":
                server.reset_stats()
            s = server.stats()
            print(json.dumps({"requests": s.requests, "max_in_flight": s.max_in_flight,
                              "statuses": dict(s.statuses)}), flush=True)


def requests(n: int, seed: int = 0) -> list:
    from bench.engines_bare import personas

    return [pair[0] for pair in personas(n, seed)]


def engine(url: str, concurrency: int):
    from socbench.engines.openai_api import OpenAIEngine, OpenAISettings

    return OpenAIEngine(OpenAISettings(api_base=url, model="fake-model", concurrent_requests=concurrency))


def batched_client(url: str, calls: list, batch: int = 50) -> int:
    """The original system's client: aiohttp, ``batch`` requests at a time, wait for all of them."""
    import aiohttp

    async def main() -> int:
        ok = 0
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http:
            async def one(call) -> bool:
                async with http.post(url + call.path, json=call.body) as response:
                    data = await response.json()
                    return bool(data["choices"][0]["message"]["content"])
            for start in range(0, len(calls), batch):
                ok += sum(await asyncio.gather(*(one(c) for c in calls[start:start + batch])))
        return ok

    return asyncio.run(main())


def client_vs_batched(n: int, concurrency: int) -> dict:
    server = Server(latency_ms=100)
    try:
        prompts = requests(n)
        ours = engine(server.url, concurrency)
        calls = [ours._generate_call(p) for p in prompts]
        server.reset()
        ours_s, results, load_ours = common.timed(lambda: ours.generate(prompts))
        stats = server.stats()
        assert all(r.error is None for r in results), "our client got errors"
        server.reset()
        base_s, ok, load_base = common.timed(lambda: batched_client(server.url, calls))
        assert ok == n
    finally:
        server.stop()
    return {"prompts": n, "concurrent_requests": concurrency, "ours_s": round(ours_s, 2),
            "batched50_s": round(base_s, 2), "ours_prompts_per_s": round(n / ours_s, 1),
            "batched50_prompts_per_s": round(n / base_s, 1), "speedup": round(base_s / ours_s, 2),
            "max_in_flight": stats["max_in_flight"], "server_requests": stats["requests"],
            "ideal_ours_s": round(n / concurrency * 0.1, 2), "ideal_batched50_s": round(n / 50 * 0.1, 2),
            "load_ours": load_ours, "load_batched": load_base}


def memory_run(domains: int, per_domain: int) -> None:
    """Child process: ``domains`` cached-engine calls; prints one JSON line per domain."""
    import psutil

    from socbench.engines.cache import CachedEngine, EngineCache

    server = Server(latency_ms=0)
    proc = psutil.Process()
    cache = Path(tempfile.mkdtemp(prefix="bench-mem-")) / "engine.sqlite"
    cached = CachedEngine(engine(server.url, 256), EngineCache(cache))
    try:
        for d in range(domains):
            prompts = requests(per_domain, seed=1000 + d)
            start = time.perf_counter()
            results = cached.generate(prompts)
            assert sum(r.error is None for r in results) == per_domain
            del results, prompts
            print(json.dumps({"domain": d + 1, "s": round(time.perf_counter() - start, 1),
                              "rss_mb": round(proc.memory_info().rss / 2**20, 1),
                              "max_rss_mb": round(common.max_rss_mb(), 1), "load": common.load_avg()}),
                  flush=True)
    finally:
        cached.close()
        server.stop()


def memory(domains: int, per_domain: int) -> dict:
    command = [common.PY, "-m", "bench.api_client", "--memory-child", str(domains), str(per_domain)]
    out = subprocess.run(command, check=True, capture_output=True, text=True, cwd=common.ROOT).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    growth = (rows[-1]["rss_mb"] - rows[0]["rss_mb"]) / max(1, len(rows) - 1)  # per extra domain
    projected = rows[-1]["max_rss_mb"] + max(0.0, growth) * (10 - len(rows)) * DOMAIN_PROMPTS / per_domain
    return {"per_domain": per_domain, "rows": rows, "rss_growth_mb_per_domain": round(growth, 1),
            "projected_max_rss_mb_277500": round(projected, 1)}


def main() -> None:
    if sys.argv[1:2] == ["--serve"]:
        return serve(float(sys.argv[2]))
    if sys.argv[1:2] == ["--memory-child"]:
        common.setup_env()
        return memory_run(int(sys.argv[2]), int(sys.argv[3]))
    p = common.parser(__doc__)
    p.add_argument("--prompts", type=int, default=20_000)
    p.add_argument("--concurrent_requests", type=int, default=256)
    p.add_argument("--domains", type=int, default=2, help="domain-sized calls in the memory run")
    args = p.parse_args()
    common.setup_env()
    n = 500 if args.quick else args.prompts
    row = client_vs_batched(n, args.concurrent_requests)
    print(f"client: {row}", flush=True)
    mem = memory(1 if args.quick else args.domains, 500 if args.quick else DOMAIN_PROMPTS)
    print(f"memory: {mem}", flush=True)
    figures = {"ours_prompts_per_s": row["ours_prompts_per_s"],
               "batched50_prompts_per_s": row["batched50_prompts_per_s"],
               "max_in_flight": row["max_in_flight"], "max_rss_mb": mem["rows"][-1]["max_rss_mb"],
               "projected_max_rss_mb_277500": mem["projected_max_rss_mb_277500"]}
    met = (row["speedup"] >= 4.5 and row["max_in_flight"] <= args.concurrent_requests
           and mem["projected_max_rss_mb_277500"] < 2048)
    common.report("api_client", figures, "speedup over batches of 50", row["speedup"],
                  ">= 4.5x, max in flight <= concurrent_requests, RSS < 2 GB", met,
                  {"client": row, "memory": mem, "quick": args.quick})


if __name__ == "__main__":
    main()
