"""The book's execution time against its budget: each chapter's last execution (myst-nb's
jupyter-cache under _build/.jupyter_cache, what the execution-status page shows) must take at most
CHAPTER_S seconds and the whole book at most BOOK_S, on the 2-core machine the book is written for.

A chapter over its budget fails CI with its time and what to do: shrink its live section to what
teaches, or read stored results. Usage, from the repository root after `jupyter-book build .`:
    python .ci/book_times.py [CACHE_DIR]
"""

import sys
from pathlib import Path

from jupyter_cache import get_cache

CHAPTER_S = 90  # seconds, one chapter (issue: "no chapter takes over 90 s")
BOOK_S = 600  # seconds, every chapter together ("the whole book executes in ≤ 10 minutes")


def main(cache_dir: str = "_build/.jupyter_cache") -> int:
    if not Path(cache_dir).is_dir():
        print(f"no execution cache at {cache_dir}: build the book first (jupyter-book build .)")
        return 1
    times = {Path(r.uri).name: float((r.data or {}).get("execution_seconds") or 0.0)
             for r in get_cache(cache_dir).list_cache_records()}  # fmt: skip
    if not times:
        print(f"the execution cache at {cache_dir} holds no executed chapter")
        return 1
    over = {name: t for name, t in times.items() if t > CHAPTER_S}
    for name, t in sorted(times.items(), key=lambda kv: -kv[1]):
        print(f"{'OVER' if name in over else 'ok  '} {t:6.1f} s  {name}")
    total = sum(times.values())
    print(
        f"{'OVER' if total > BOOK_S else 'ok  '} {total:6.1f} s  the whole book (budget {BOOK_S} s; a chapter {CHAPTER_S} s)"
    )
    for name, t in over.items():
        print(
            f"{name} took {t:.0f} s, over its {CHAPTER_S} s: shrink its live section to what teaches, or read stored results"
        )
    return 1 if over or total > BOOK_S else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
