"""The thirteen extra Picbreeder targets: download a public fork of the FER repository, verify, convert.

The public repository `jagilley/fer` (a fork of `akarshkumar0101/fer`, Apache License 2.0) ships,
at the pinned commit, layered networks of sixteen Picbreeder images in the original repository's
format (`data/picbreeder_ID_NAME/{arch.pkl, params.pkl, img.png}`): the original skull, butterfly
and apple (byte-identical, so not downloaded again) and the thirteen below. There are **no genome
XML files and no SGD twins** for the thirteen: the fork's layered network *is* their network.

`fetch()` downloads the 39 files of the thirteen (1.0 MB; SHA-256 and size of each pinned in
`SOURCES` below) with `pooch`, which checks each file's pinned SHA-256 *before* anything reads it,
converts them in memory exactly as `volratio.data.fer_data` converts the original three's layered
networks (`fer_data.network_npz`: the restricted unpickler of `volratio.data.jaxpickle`, numpy array
reconstruction only), and only then writes, atomically, one folder per target:

    NAME/target.png        the 256×256 image (data/picbreeder_ID_NAME/img.png)
    NAME/fer_layered.npz   the fork's layered network (data/picbreeder_ID_NAME/{params,arch}.pkl)

A failed, truncated or tampered download, or a pickle naming any other callable, installs nothing
and leaves an existing installation as it was. The folders go next to the original three (by
default the user cache, `fer_data.cache_dir()`); `picbreeder.extra_dir()` looks for them where
it looks for the original data. `ensure()` is the first-use path (one line on stderr, or the
one-line fix under `VOLRATIO_OFFLINE=1`); `VOLRATIO_FER_FORK_URL` (or `volratio data fetch --extra
--url`) replaces the fork's base URL — a mirror, or the byte-exact copy in
`../shared/data/fer-fork-mirror` served on 127.0.0.1 in the tests and in CI.

Chapter: "Picbreeder networks and their SGD twins" (the gallery of sixteen); README "Getting the
Picbreeder data".
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from urllib.parse import urlparse

from ..errors import DataNotFoundError
from .fer_data import OFFLINE_ENV, cache_dir, download_verified, install, missing_in, network_npz, offline

REPO = "jagilley/fer"
COMMIT = "0f2b0a2b4ecd08914394c2999a6bf5ac004b3f49"
DEFAULT_URL = f"https://raw.githubusercontent.com/{REPO}/{COMMIT}/"
URL_ENV = "VOLRATIO_FER_FORK_URL"  # base URL override (a mirror; tests and CI serve one on 127.0.0.1)

# our short name -> the fork's folder under data/ (named after what each image shows)
FOLDERS = {
    "butterfly-grey": "picbreeder_1009_ButterflyGreyscale",
    "coif": "picbreeder_121_ShortSDCoif",
    "firefly": "picbreeder_2914_Firefly",
    "squares": "picbreeder_3257_Quadravision",
    "mystic": "picbreeder_3674_Mystic",
    "spotlight": "picbreeder_395_SpotlightCastingShadow",
    "dolphin": "picbreeder_4041_Doplhin",  # (sic: the upstream spelling)
    "moon": "picbreeder_409_Moonlight",
    "face": "picbreeder_4547_Face",
    "ghost": "picbreeder_542_GhostFaceSpooky",
    "sad-face": "picbreeder_613_SadFace",
    "letter-g": "picbreeder_745_LetterG",
    "plane": "picbreeder_765_PlaneOnRunway",
}
NAMES = tuple(FOLDERS)

# the files each target's folder holds once installed; a folder missing any of them is incomplete
INSTALLED_FILES = ("target.png", "fer_layered.npz")

# {path in the fork at COMMIT: (sha256, size in bytes)} — every file fetch() downloads
SOURCES = {
    "data/picbreeder_1009_ButterflyGreyscale/arch.pkl": (
        "d3ffd67bb43d62667be747a76be3b1ce3375513802e367ce0def2e5083a69ab1",
        48,
    ),
    "data/picbreeder_1009_ButterflyGreyscale/img.png": (
        "89f7bb0de27a800ddbe991f901789ee19013a356308c5dfc918d28ec84e44009",
        29599,
    ),
    "data/picbreeder_1009_ButterflyGreyscale/params.pkl": (
        "c6bd55a9782d2b15175ce0d05587166b690412c4d78839c2a1dd041b6ca94320",
        18370,
    ),
    "data/picbreeder_121_ShortSDCoif/arch.pkl": (
        "6ddff28aef8fae6590301baacb04677335c5d2c7ca0a511ecf0ec8859c380670",
        68,
    ),
    "data/picbreeder_121_ShortSDCoif/img.png": (
        "0d14a2ca94e08ecc54e058ceef70ec445c50be7815816965b43f306770ed15e6",
        22928,
    ),
    "data/picbreeder_121_ShortSDCoif/params.pkl": (
        "2baa98b02e2bd9bfb559adcf1f2206c59f975d919ca8ba464219c5357cd3a7c7",
        7826,
    ),
    "data/picbreeder_2914_Firefly/arch.pkl": ("d8ccba403c123a366cf5e29ac664cc195c4815a5cbafd9c2dd18d093a1aa7646", 64),
    "data/picbreeder_2914_Firefly/img.png": ("17193ed0bb5a15d72629a7cbcfc5d139e9702f11c454b2215783cf4de664cf5c", 29096),
    "data/picbreeder_2914_Firefly/params.pkl": (
        "9c0364c2aa37dbf8d318c166d10cfad1ac0957a022f002953467f418db1e4b3a",
        49266,
    ),
    "data/picbreeder_3257_Quadravision/arch.pkl": (
        "9ce3fc70c60544d2f2e4c87846ef030b764146b6c21e765c2651d65192811427",
        64,
    ),
    "data/picbreeder_3257_Quadravision/img.png": (
        "b1068766b4d65a767c74908b2beb078f9486a6eb8e1902caeb44c11be9f008a0",
        20717,
    ),
    "data/picbreeder_3257_Quadravision/params.pkl": (
        "7db32afe2ea1ff8cd292e3ace3ef1aa0b8ae513f05e03ac5a07f17ae3c5d9236",
        43410,
    ),
    "data/picbreeder_3674_Mystic/arch.pkl": ("4ccf1276c1194df093e44d04409fe48a043584f6a3eef44344192ce00d1255f8", 64),
    "data/picbreeder_3674_Mystic/img.png": ("c9024ff297ad9ce3caa22edfcde062d95c2a398a74eca970d8251856d6f0c414", 45353),
    "data/picbreeder_3674_Mystic/params.pkl": (
        "33bf68cdbc6943c3df45f4fa39d0bac0ac60d6117320ee75e44b0eaad3880e61",
        108999,
    ),
    "data/picbreeder_395_SpotlightCastingShadow/arch.pkl": (
        "5633f773f6773972bdc5189483c7befc690129b07d47b71a5fbb4b41a2ec1f80",
        64,
    ),
    "data/picbreeder_395_SpotlightCastingShadow/img.png": (
        "8b052695109f7e26e89684144c28fd3cb5720ae71851c3574188f5b79df13f1d",
        15344,
    ),
    "data/picbreeder_395_SpotlightCastingShadow/params.pkl": (
        "35eabaaa18fd7226b5ec9d18007e81d1c9e90ca9d2023f435afcf3413373b4c5",
        68043,
    ),
    "data/picbreeder_4041_Doplhin/arch.pkl": ("19b6fc921ab66a05bb05a10e14e7a5f11cea1ff38dfbbd0bb682535fcede5546", 53),
    "data/picbreeder_4041_Doplhin/img.png": ("7869988887e2df1df4a58c36eaa725a325dbe0e8ec0d865391873b0f4dfc155a", 56997),
    "data/picbreeder_4041_Doplhin/params.pkl": (
        "f323c64fabc798f193401d24f9ba9b66fb64b0defe78d9cd5f1e755cac64e5cb",
        43418,
    ),
    "data/picbreeder_409_Moonlight/arch.pkl": ("6cf7f939310a283c4d5356ae6d2742734e2912a30f25f7b0a61163d3a5f44756", 64),
    "data/picbreeder_409_Moonlight/img.png": (
        "82400ea875178a60e1fb408f4f8342f06bb9db8656f26fd7f2120157b2616070",
        23005,
    ),
    "data/picbreeder_409_Moonlight/params.pkl": (
        "e89c8157cc59651deadb5127a9ecfc53f76b746b9981179f1ab6b26cbeae19bc",
        176487,
    ),
    "data/picbreeder_4547_Face/arch.pkl": ("d9f32fd516919f20033d97781e0ea059870b5c1865fbfb163b87dcbe85c5b16e", 53),
    "data/picbreeder_4547_Face/img.png": ("f5744e6ce1566fce9fb8ec51d7d0461ba7d6ea1922edb33ea280ea397e331e71", 59495),
    "data/picbreeder_4547_Face/params.pkl": ("452ed68516a768a118865e4ab57035fbda996ef4a930949c9e3b99ebdef32195", 31170),
    "data/picbreeder_542_GhostFaceSpooky/arch.pkl": (
        "71e93a9c4a7846e2f85126b1cc9f086ffe062cc52eb132b57345635bfd2b986d",
        52,
    ),
    "data/picbreeder_542_GhostFaceSpooky/img.png": (
        "5f9e8dde56d2b803b55f3692198dd4c20bf7ce4ef80b7543437d2377d567e015",
        15849,
    ),
    "data/picbreeder_542_GhostFaceSpooky/params.pkl": (
        "4ff4d7e5c693f688405df2c51841d6f42325e824c166a64af5b0c6f8865bc5f0",
        4002,
    ),
    "data/picbreeder_613_SadFace/arch.pkl": ("f55aa3cd6cbd8373db82159e12804755aa2f0ef435121a89ea71b4efc1bea564", 54),
    "data/picbreeder_613_SadFace/img.png": ("21c613302e0f830559460cf79cd7869f3c0c2c0e9c7830df04b606fc53ebd0c6", 27973),
    "data/picbreeder_613_SadFace/params.pkl": (
        "38044a7444fa1285a97d765aacfc46471fd78c4fe72937cf6deb6848cb978125",
        23922,
    ),
    "data/picbreeder_745_LetterG/arch.pkl": ("c965e161d24c688bf2ef8a16d9821f59baae1e34a98f35f5de81676d110fc937", 54),
    "data/picbreeder_745_LetterG/img.png": ("b8dd3c52b85745893ab89458ee8c8d520c7f32415dc6047d2d0db369886fce2d", 16505),
    "data/picbreeder_745_LetterG/params.pkl": (
        "f9ef265c36989b665f5e9b49a7353c5a09c0a0c87352a5845637f0bee6dc8a73",
        15170,
    ),
    "data/picbreeder_765_PlaneOnRunway/arch.pkl": (
        "60c0f2b08d82b88b290dcc4fc6e7eddc63143ef654d5834824731f13af1d5956",
        48,
    ),
    "data/picbreeder_765_PlaneOnRunway/img.png": (
        "fd0e7ce0412329fc577100fa69ca622f684f8de3311f29bb0dd8f2a8ba74c3d8",
        10841,
    ),
    "data/picbreeder_765_PlaneOnRunway/params.pkl": (
        "5fd5547489f77aeeb4a38725606d099cd77ee3724ec173f7b6103b7018af46d5",
        37746,
    ),
}


def download_bytes() -> int:
    """How many bytes a full `fetch()` downloads."""
    return sum(size for _, size in SOURCES.values())


def base_url(url: str | None = None) -> str:
    """The base URL to download from: `url`, else `$VOLRATIO_FER_FORK_URL`, else the fork at the
    pinned commit. Raises `DataNotFoundError` for anything that is not an http(s) URL."""
    url = url or os.environ.get(URL_ENV) or DEFAULT_URL
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise DataNotFoundError(
            f"download URL {url!r} is not an http(s) URL; give the base URL of a copy of the fork's "
            f"files, e.g. {DEFAULT_URL}"
        )
    return url if url.endswith("/") else url + "/"


def raw_cache_dir() -> Path:
    """Where pooch keeps the verified original files (`<user cache>/volratio/fer-fork-<commit>`)."""
    return cache_dir().parent / f"fer-fork-{COMMIT[:12]}"


def convert(blobs: dict[str, bytes]) -> dict[str, dict[str, bytes]]:
    """`{NAME: {installed file name: bytes}}` from the downloaded files, all in memory. The layered
    network is converted by `fer_data.network_npz`, the same conversion as the original three's."""
    out = {}
    for name, folder in FOLDERS.items():
        d = f"data/{folder}"
        out[name] = {
            "target.png": blobs[f"{d}/img.png"],
            "fer_layered.npz": network_npz(blobs[f"{d}/params.pkl"], blobs[f"{d}/arch.pkl"], what=d),
        }
    return out


def fetch(dest: "str | Path | None" = None, url: str | None = None) -> Path:
    """Download the fork's files of the thirteen extra targets, verify, convert, and install under
    `dest` (default: `fer_data.cache_dir()`, beside the original three). Returns `dest`.

    Nothing is written under `dest` until every file has been downloaded, verified against its
    pinned SHA-256 and converted; each file is then written atomically. Raises `DataNotFoundError`
    (or `jaxpickle.UnsafePickleError`) naming the file and the fix."""
    url = base_url(url)
    dest = Path(dest).expanduser() if dest else cache_dir()
    registry = {rel: f"sha256:{digest}" for rel, (digest, _) in SOURCES.items()}
    blobs = download_verified(
        url, registry, raw_cache_dir(), COMMIT, URL_ENV, "set VOLRATIO_DATA to a folder holding the thirteen targets"
    )
    return install(convert(blobs), dest)


def complete(folder: Path) -> bool:
    """Whether `folder` holds every installed file of every extra target."""
    return not missing(folder)


def missing(folder: Path) -> list[str]:
    """The installed files `folder` lacks, as `NAME/file` (empty when complete)."""
    return missing_in(folder, NAMES, INSTALLED_FILES)


def ensure(looked: str) -> Path:
    """First use: download the thirteen into the cache with a one-line notice, or — offline — raise
    the one-line fix. `looked` lists the folders already searched, for the error message."""
    if offline():
        raise DataNotFoundError(
            f"the thirteen extra Picbreeder targets were not found (looked in {looked}) and {OFFLINE_ENV}=1 "
            "forbids downloading them; run `volratio data fetch --extra` once with network, or set "
            "VOLRATIO_DATA to a folder holding them"
        )
    url = base_url()
    print(
        f"volratio: extra Picbreeder targets not found; downloading {download_bytes() / 1e6:.1f} MB "
        f"({REPO} files at {COMMIT[:12]}) from {url} into {cache_dir()} (set {OFFLINE_ENV}=1 to prevent)",
        file=sys.stderr,
        flush=True,
    )
    return fetch(url=url)
