# Slow request bodies against a running glassbox: python3 bench/slow_bodies.py PORT N. N connections
# each send a whole head announcing 100,000 bytes and one byte of body, then nothing; prints whether
# /healthz answers while they are open and 35 s later, and how the slow connections were answered.
import asyncio, sys, time
PORT = int(sys.argv[1]); N = int(sys.argv[2])
HEAD = (f"POST /auth/login HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\nn").encode()
async def slow(results):
    try:
        r, w = await asyncio.open_connection("127.0.0.1", PORT)
        w.write(HEAD); await w.drain()
        line = await asyncio.wait_for(r.readline(), 60)
        results.append(line.split(b" ")[1].decode() if line else "closed")
        w.close()
    except Exception as e:
        results.append(type(e).__name__)
async def health():
    t = time.monotonic()
    try:
        r, w = await asyncio.open_connection("127.0.0.1", PORT)
        w.write(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{PORT}\r\n\r\n".encode()); await w.drain()
        line = await asyncio.wait_for(r.readline(), 5)
        w.close()
        return f"{line.split(b' ')[1].decode()} in {time.monotonic()-t:.2f} s"
    except Exception as e:
        return f"{type(e).__name__} after {time.monotonic()-t:.2f} s"
async def main():
    results = []
    tasks = [asyncio.create_task(slow(results)) for _ in range(N)]
    await asyncio.sleep(5)
    print("healthz with", N, "slow bodies open:", await health(), flush=True)
    await asyncio.sleep(30)
    print("healthz 35 s later:", await health(), flush=True)
    await asyncio.gather(*tasks)
    from collections import Counter
    print("slow connections answered:", dict(Counter(results)))
asyncio.run(main())
