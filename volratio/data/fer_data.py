"""Getting the Picbreeder data: download the FER repository's files, verify, convert, install.

Kumar, Clune, Lehman & Stanley (2025) published the three Picbreeder genomes, their images, their
own layerization of each genome and the dense SGD network they trained on each image in the public
repository `akarshkumar0101/fer`. `fetch()` downloads every file of it that this library uses
(21 files, 1.8 MB; list, sizes and SHA-256 in `picbreeder_sources.sha256`) at the pinned commit with
`pooch`, which checks each file's pinned SHA-256 *before* anything reads it and keeps verified files
in its cache. The files are then converted into the library's own format, one folder per target:

    NAME/genome.xml        the Picbreeder genome (from picbreeder_genomes/NAME.zip)
    NAME/target.png        the 256×256 image the genome draws (data/picbreeder_NAME/img.png)
    NAME/fer_layered.npz   FER's layerized genome (data/picbreeder_NAME/{params,arch}.pkl)
    NAME/fer_sgd.npz       FER's dense SGD network and its losses (data/sgd_NAME/{params,arch,losses}.pkl)

The `.pkl` files are JAX pickles of flat arrays; they are read by `volratio.data.jaxpickle`'s
allow-list unpickler (numpy array reconstruction only). Everything is downloaded, verified and
converted in memory before the first file is written, and every file is written atomically, so a
failed, truncated or tampered download installs nothing and leaves an existing installation as it
was. Each `npz` holds `arch`, `n_layers` and the kernels `W0 … W{n_layers-1}` of shape
(fan_in, fan_out) (and `losses` for the SGD network) — the layout `picbreeder.fer_network` reads.

`ensure()` is the first-use path: when a chapter or command needs the data and no complete copy is
found, it prints one line (what, how much, from where, to where) and fetches, unless
`VOLRATIO_OFFLINE=1`. `VOLRATIO_FER_URL` (or `volratio data fetch --url`) replaces the repository's
base URL — a mirror, or the byte-exact copy in `../shared/data/fer-mirror` served on 127.0.0.1 in
the tests. Chapter: "Picbreeder networks and their SGD twins"; README "Getting the Picbreeder data".
"""

from __future__ import annotations

import io
import os
import sys
import warnings
import zipfile
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import platformdirs  # the user cache folder, as pooch.os_cache finds it

from ..errors import DataNotFoundError
from ..nets import Arch
from ..util.fileio import atomic_path
from . import jaxpickle
from .genome import parse_genome

REPO = "akarshkumar0101/fer"
COMMIT = "23a9c452a57810c86db07c3ed23c1d1352011299"
NAMES = ("skull", "butterfly", "apple")
DEFAULT_URL = f"https://raw.githubusercontent.com/{REPO}/{COMMIT}/"
CHECKSUMS = Path(__file__).with_name("picbreeder_sources.sha256")  # package data (pyproject.toml)
URL_ENV = "VOLRATIO_FER_URL"  # base URL override (a mirror; tests serve one on 127.0.0.1)
OFFLINE_ENV = "VOLRATIO_OFFLINE"  # "1": never download on first use

# the files each target's folder holds once installed; a folder missing any of them is incomplete
INSTALLED_FILES = ("genome.xml", "target.png", "fer_layered.npz", "fer_sgd.npz")


def sources() -> dict[str, tuple[str, int]]:
    """`{path in the repository: (sha256, size in bytes)}` for every file `fetch()` downloads."""
    out = {}
    for line in CHECKSUMS.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            digest, size, rel = line.split()
            out[rel] = (digest, int(size))
    return out


def download_bytes() -> int:
    """How many bytes a full `fetch()` downloads."""
    return sum(size for _, size in sources().values())


def base_url(url: str | None = None) -> str:
    """The base URL to download from: `url`, else `$VOLRATIO_FER_URL`, else the repository at the
    pinned commit. Raises `DataNotFoundError` for anything that is not an http(s) URL."""
    url = url or os.environ.get(URL_ENV) or DEFAULT_URL
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise DataNotFoundError(
            f"download URL {url!r} is not an http(s) URL; give the base URL of a copy of the "
            f"repository's files, e.g. {DEFAULT_URL}"
        )
    return url if url.endswith("/") else url + "/"


def cache_dir() -> Path:
    """Where `volratio.data.fer_data.fetch()` installs the data: the user cache (on Linux
    `$XDG_CACHE_HOME/volratio/picbreeder`, by default `~/.cache/volratio/picbreeder`)."""
    return Path(platformdirs.user_cache_dir("volratio")) / "picbreeder"


def raw_cache_dir() -> Path:
    """Where pooch keeps the verified original files (`<user cache>/volratio/fer-<commit>`)."""
    return cache_dir().parent / f"fer-{COMMIT[:12]}"


def offline() -> bool:
    return os.environ.get(OFFLINE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


# ---------------------------------------------------------------------------------------------
# Download and verification


def download_verified(
    url: str, registry: dict[str, str], cache: Path, commit: str, url_env: str, fix: str
) -> dict[str, bytes]:
    """`{path: bytes}` of every file in `registry` (`{path: "sha256:…"}`) under `url`, each
    verified against its pinned SHA-256 by pooch before it is read (verified files are kept in
    `cache`). Raises `DataNotFoundError` naming the file and the fix (`url_env`, then `fix`) at the
    first download that fails or does not match. Shared by the FER data and the fork's
    (`volratio.data.fer_fork`)."""
    # rare path, kept here: only a download needs requests and pooch, and importing them would slow
    # every import of the data layer (pooch also imports tqdm.auto)
    import requests

    with warnings.catch_warnings():  # tqdm.auto warns in a kernel without ipywidgets
        warnings.filterwarnings("ignore", message=".*IProgress not found.*")
        import pooch  # rare path: see above

    pooch.get_logger().setLevel("WARNING")  # one notice line for the whole download, not one per file
    store = pooch.create(path=cache, base_url=url, registry=registry, retry_if_failed=1)
    blobs = {}
    for rel in registry:
        try:
            path = store.fetch(rel)
        except ValueError as e:  # pooch: the SHA-256 of the download does not match the pin
            raise DataNotFoundError(
                f"{url}{rel}: the download does not match its pinned SHA-256 (corrupt, truncated or "
                f"not the file at commit {commit[:12]}); nothing was installed — retry, or point "
                f"{url_env} at an intact copy ({e})"
            ) from None
        except (requests.RequestException, OSError) as e:
            raise DataNotFoundError(
                f"could not download {url}{rel} ({type(e).__name__}: {e}); nothing was installed — "
                f"check the network, or set {url_env} to a mirror, or {fix}"
            ) from None
        blobs[rel] = Path(path).read_bytes()
    return blobs


def _download_all(url: str) -> dict[str, bytes]:
    """Every source file's bytes, each verified against its pinned SHA-256 by pooch."""
    registry = {rel: f"sha256:{digest}" for rel, (digest, _) in sources().items()}
    return download_verified(
        url,
        registry,
        raw_cache_dir(),
        COMMIT,
        URL_ENV,
        "set VOLRATIO_DATA to a folder holding skull/, butterfly/ and apple/",
    )


# ---------------------------------------------------------------------------------------------
# Conversion into the library's format


def split_kernels(flat: np.ndarray, arch: str) -> list[np.ndarray]:
    """Split FER's flat parameter vector into kernels `W0 … WL`, each (fan_in, fan_out).

    The vector is JAX's flattening of `{"Dense_0": …, …, "Dense_L": …}`: keys sorted as strings
    (so `Dense_10` comes before `Dense_2`), each kernel row-major. Layer 0 maps the 4 inputs
    `(y, x, d, bias)` to the hidden width, layers 1..L-1 are square, layer L maps to 3 outputs."""
    a = Arch.parse(arch)
    shapes = [(4, a.width)] + [(a.width, a.width)] * (a.depth - 1) + [(a.width, 3)]
    if flat.ndim != 1 or flat.size != sum(r * c for r, c in shapes):
        raise DataNotFoundError(
            f"a FER network of arch {arch!r} needs {sum(r * c for r, c in shapes)} parameters, the file "
            f"holds an array of shape {flat.shape}; re-fetch with `volratio data fetch`"
        )
    kernels: list[np.ndarray | None] = [None] * len(shapes)
    offset = 0
    for i in sorted(range(len(shapes)), key=lambda i: f"Dense_{i}"):
        n = shapes[i][0] * shapes[i][1]
        kernels[i] = np.ascontiguousarray(flat[offset : offset + n].reshape(shapes[i]))
        offset += n
    return kernels


def network_npz(params: bytes, arch: bytes, losses: bytes | None = None, what: str = "") -> bytes:
    """The `.npz` (in memory) of one FER network from its pickled `params`, `arch` and `losses`."""
    arch_s = jaxpickle.load_str(arch, f"{what}/arch.pkl")
    flat = jaxpickle.load_array(params, f"{what}/params.pkl")
    arrays = {"arch": np.array(arch_s), "n_layers": np.array(Arch.parse(arch_s).depth + 1)}
    for i, k in enumerate(split_kernels(flat, arch_s)):
        arrays[f"W{i}"] = k
    if losses is not None:
        arrays["losses"] = jaxpickle.load_array(losses, f"{what}/losses.pkl").reshape(-1)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def genome_xml(zip_blob: bytes, name: str) -> bytes:
    """The genome XML inside `picbreeder_genomes/NAME.zip`, checked to parse as a genome."""
    with zipfile.ZipFile(io.BytesIO(zip_blob)) as zf:
        members = [i for i in zf.infolist() if not i.is_dir()]
        if len(members) != 1:  # upstream: one member, named "a"
            raise DataNotFoundError(f"picbreeder_genomes/{name}.zip holds {len(members)} files, expected 1 genome")
        xml = zf.read(members[0])
    parse_genome(xml, name=name)  # refuse to install a genome we cannot read
    return xml


def convert(blobs: dict[str, bytes]) -> dict[str, dict[str, bytes]]:
    """`{NAME: {installed file name: bytes}}` from the downloaded files, all in memory."""
    out = {}
    for name in NAMES:
        pic, sgd = f"data/picbreeder_{name}", f"data/sgd_{name}"
        out[name] = {
            "genome.xml": genome_xml(blobs[f"picbreeder_genomes/{name}.zip"], name),
            "target.png": blobs[f"{pic}/img.png"],
            "fer_layered.npz": network_npz(blobs[f"{pic}/params.pkl"], blobs[f"{pic}/arch.pkl"], what=pic),
            "fer_sgd.npz": network_npz(
                blobs[f"{sgd}/params.pkl"], blobs[f"{sgd}/arch.pkl"], blobs[f"{sgd}/losses.pkl"], what=sgd
            ),
        }
    return out


# ---------------------------------------------------------------------------------------------
# Install


def fetch(dest: "str | Path | None" = None, url: str | None = None) -> Path:
    """Download every FER file the library uses, verify, convert, and install under `dest`
    (default: `cache_dir()`). Returns `dest`.

    Nothing is written under `dest` until every file has been downloaded, verified against its
    pinned SHA-256 and converted; each file is then written atomically. Raises `DataNotFoundError`
    naming the file and the fix when a download fails or does not match."""
    url = base_url(url)
    dest = Path(dest).expanduser() if dest else cache_dir()
    return install(convert(_download_all(url)), dest)


def install(files: dict, dest: Path) -> Path:
    """Write converted files (`{target: {file name: bytes}}`) under `dest`, each atomically."""
    for name, named in files.items():
        for fname, blob in named.items():
            with atomic_path(dest / name / fname) as tmp:
                tmp.write_bytes(blob)
    return dest


def missing_in(folder: Path, names, files) -> list[str]:
    """The files of `files` that `folder/NAME/` lacks for each of `names`, as `NAME/file`."""
    return [f"{n}/{f}" for n in names for f in files if not (folder / n / f).is_file()]


def complete(folder: Path) -> bool:
    """Whether `folder` holds every installed file of every target."""
    return not missing(folder)


def missing(folder: Path) -> list[str]:
    """The installed files `folder` lacks, as `NAME/file` (empty when complete)."""
    return missing_in(folder, NAMES, INSTALLED_FILES)


def ensure(looked: str) -> Path:
    """First use: download the data into the cache with a one-line notice, or — offline — raise the
    one-line fix. `looked` lists the folders already searched, for the error message."""
    if offline():
        raise DataNotFoundError(
            f"Picbreeder data not found (looked in {looked}) and {OFFLINE_ENV}=1 forbids downloading "
            f"it; run `volratio data fetch` once with network, or set VOLRATIO_DATA to a folder holding "
            "skull/, butterfly/ and apple/"
        )
    url = base_url()
    print(
        f"volratio: Picbreeder data not found; downloading {download_bytes() / 1e6:.1f} MB "
        f"(FER repository files at {COMMIT[:12]}) from {url} into {cache_dir()} "
        f"(set {OFFLINE_ENV}=1 to prevent)",
        file=sys.stderr,
        flush=True,
    )
    return fetch(url=url)
