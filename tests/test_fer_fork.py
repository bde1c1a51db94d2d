"""The second dataset: the fork jagilley/fer's thirteen extra Picbreeder targets, served on
127.0.0.1 from the byte-exact mirror in ../shared/data/fer-fork-mirror, fetched into an empty
cache, verified, converted — with the same guarantees as the original data (test_fer_data.py)."""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from volratio.data import fer_data, fer_fork, jaxpickle, picbreeder
from volratio.data.targets import get_target
from volratio.errors import DataNotFoundError

FORK_MIRROR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "fer-fork-mirror"
needs_mirror = pytest.mark.skipif(not (FORK_MIRROR / "SHA256SUMS").is_file(), reason=f"no fork mirror at {FORK_MIRROR}")


def _installed(folder: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@needs_mirror
def test_pins_are_the_mirrors_checksums_and_sizes():
    listed = dict(reversed(line.split()) for line in (FORK_MIRROR / "SHA256SUMS").read_text().splitlines())
    assert set(fer_fork.SOURCES) == set(listed) and len(fer_fork.SOURCES) == 3 * len(fer_fork.NAMES) == 39
    for rel, (digest, size) in fer_fork.SOURCES.items():
        assert digest == listed[rel] and size == (FORK_MIRROR / rel).stat().st_size, rel
    assert {rel.split("/")[1] for rel in fer_fork.SOURCES} == set(fer_fork.FOLDERS.values())
    assert fer_fork.download_bytes() == sum((FORK_MIRROR / rel).stat().st_size for rel in listed)


def test_names_are_new_and_short():
    assert len(fer_fork.NAMES) == 13 and not set(fer_fork.NAMES) & set(fer_data.NAMES)
    assert picbreeder.ALL_NAMES[:3] == fer_data.NAMES == ("skull", "butterfly", "apple")
    assert all(len(n) <= 14 and n == n.lower() and " " not in n for n in fer_fork.NAMES)


@needs_mirror
def test_fetch_converts_like_the_original_data(fresh_machine, serve):
    with serve(FORK_MIRROR) as url:
        dest = fer_fork.fetch(url=url)
    assert dest == fer_data.cache_dir() and fer_fork.complete(dest) and not fer_data.complete(dest)
    assert fer_fork.raw_cache_dir().name == "fer-fork-0f2b0a2b4ecd"
    for name, folder in fer_fork.FOLDERS.items():
        src = FORK_MIRROR / "data" / folder
        assert (dest / name / "target.png").read_bytes() == (src / "img.png").read_bytes()
        arch = jaxpickle.load_str((src / "arch.pkl").read_bytes())
        kernels = fer_data.split_kernels(jaxpickle.load_array((src / "params.pkl").read_bytes()), arch)
        with np.load(dest / name / "fer_layered.npz", allow_pickle=False) as z:
            assert sorted(z.files) == sorted(["arch", "n_layers"] + [f"W{i}" for i in range(len(kernels))])
            assert str(z["arch"]) == arch and int(z["n_layers"]) == len(kernels) == int(arch.split(";")[0]) + 1
            for i, k in enumerate(kernels):
                assert z[f"W{i}"].dtype == np.float32 and np.array_equal(z[f"W{i}"], k), (name, i)


@needs_mirror
def test_both_datasets_share_one_folder_without_touching_each_other(fresh_machine, serve):
    original = FORK_MIRROR.parent / "fer-mirror"
    if not (original / "SHA256SUMS").is_file():
        pytest.skip(f"no FER mirror at {original}")
    with serve(original) as url:
        fer_data.fetch(url=url)
    before = _installed(fer_data.cache_dir())
    with serve(FORK_MIRROR) as url:
        fer_fork.fetch(url=url)
    after = _installed(fer_data.cache_dir())
    assert {p: b for p, b in after.items() if p in before} == before and len(after) == len(before) + 26
    assert picbreeder.data_dir() == picbreeder.extra_dir() == fer_data.cache_dir()


@needs_mirror
def test_first_use_by_a_target_downloads_with_one_line_notice(fresh_machine, monkeypatch, capsys, serve):
    with serve(FORK_MIRROR) as url:
        monkeypatch.setenv("VOLRATIO_FER_FORK_URL", url)
        img = get_target("picbreeder:ghost").image(32)
    err = capsys.readouterr().err.strip().splitlines()
    assert img.shape == (32, 32, 3) and 0 <= img.min() and img.max() <= 1 and img.std() > 0.05
    assert len(err) == 1 and "downloading 1.0 MB" in err[0] and url in err[0] and str(fer_data.cache_dir()) in err[0]
    assert fer_fork.complete(fer_data.cache_dir())
    assert picbreeder.data_dir(required=False) is None  # the original three are a separate dataset


def test_offline_first_use_gives_the_fix(fresh_machine, monkeypatch):
    monkeypatch.setenv("VOLRATIO_OFFLINE", "1")
    with pytest.raises(DataNotFoundError, match=r"VOLRATIO_OFFLINE=1 .*volratio data fetch --extra") as e:
        get_target("picbreeder:moon").image(16)
    assert "\n" not in str(e.value)
    with pytest.raises(DataNotFoundError, match="volratio data fetch --extra"):
        picbreeder.network("moon")


LAST = f"data/{fer_fork.FOLDERS['plane']}/params.pkl"  # the last file fetched


@needs_mirror
def test_bad_download_installs_nothing_and_keeps_the_installation(fresh_machine, damage, serve, mirror_copy):
    spoil, message = damage
    good = fresh_machine / "installed"
    with serve(FORK_MIRROR) as url:
        fer_fork.fetch(good, url=url)
    before = _installed(good)
    copy = mirror_copy(FORK_MIRROR)
    spoil(copy / LAST)
    shutil.rmtree(fer_fork.raw_cache_dir())  # download afresh: nothing verified is cached
    with serve(copy) as url:
        with pytest.raises(DataNotFoundError, match=message) as e:
            fer_fork.fetch(good, url=url)
        with pytest.raises(DataNotFoundError, match=message):
            fer_fork.fetch(fresh_machine / "new", url=url)
    assert "nothing was installed" in str(e.value) and "VOLRATIO_FER_FORK_URL" in str(e.value)
    assert "\n" not in str(e.value)
    assert _installed(good) == before
    assert not (fresh_machine / "new").exists()
    assert not (fer_fork.raw_cache_dir() / LAST).exists()


class _System:
    def __init__(self, cmd):
        self.cmd = cmd

    def __reduce__(self):
        return (os.system, (self.cmd,))


@needs_mirror
def test_a_pickle_naming_another_callable_is_refused_even_with_a_matching_pin(
    fresh_machine, monkeypatch, serve, mirror_copy
):
    """The checksum is the first wall; the allow-list unpickler is the second: a file whose pin was
    (hypothetically) changed to match a malicious pickle still runs nothing and installs nothing."""
    marker = fresh_machine / "ran"
    copy = mirror_copy(FORK_MIRROR)
    rel = f"data/{fer_fork.FOLDERS['ghost']}/params.pkl"
    evil = pickle.dumps(_System(f"touch {marker}"))
    (copy / rel).write_bytes(evil)
    pins = dict(fer_fork.SOURCES, **{rel: (hashlib.sha256(evil).hexdigest(), len(evil))})
    monkeypatch.setattr(fer_fork, "SOURCES", pins)
    with serve(copy) as url:
        with pytest.raises(jaxpickle.UnsafePickleError, match="refused to unpickle: it names .*system"):
            fer_fork.fetch(fresh_machine / "dest", url=url)
    assert not marker.exists() and not (fresh_machine / "dest").exists()


@pytest.mark.parametrize("url", ["ftp://example.org/", "not a url", "file:///etc/"])
def test_bad_base_url_is_refused(url, monkeypatch):
    with pytest.raises(DataNotFoundError, match="not an http"):
        fer_fork.base_url(url)
    monkeypatch.setenv("VOLRATIO_FER_FORK_URL", url)
    with pytest.raises(DataNotFoundError, match="not an http"):
        fer_fork.base_url()


@needs_mirror
def test_cli_data_fetch_extra_and_where(fresh_machine, monkeypatch, capsys, serve):
    from volratio.cli import main

    with serve(FORK_MIRROR) as url:
        rc = main(["data", "fetch", "--extra", "--url", url, "--dest", str(fresh_machine / "d")])
    out = capsys.readouterr()
    assert rc == 0 and "13 extra Picbreeder targets" in out.out and "downloading 1.0 MB" in out.err
    assert fer_fork.complete(fresh_machine / "d") and not fer_data.complete(fresh_machine / "d")
    monkeypatch.setenv("VOLRATIO_DATA", str(fresh_machine / "d"))
    assert main(["data", "where"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Picbreeder data: not found")
    extra = next(line for line in lines if line.startswith("Extra Picbreeder targets"))
    assert extra.endswith(str(fresh_machine / "d"))


@needs_mirror
@pytest.mark.parametrize("name", fer_fork.NAMES)
def test_every_extra_network_renders_its_img_png(extra_data, name):
    """The same bound as the original three (test_fer_data.py): 8-bit rounding, MAE < 0.004."""
    target = picbreeder.target_image(name)
    img = picbreeder.fer_network(name, "layered", dtype=torch.float64).render(256)[0].float()
    assert (img - target).abs().mean().item() < 0.004
    assert (get_target(f"picbreeder:{name}").image(256) - target).abs().mean().item() < 0.004
