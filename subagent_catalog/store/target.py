"""The archive an export writes into: claimed, committed or discarded, locally or on an object store.

An export claims the target (creates it, checks it holds nothing foreign,
locks it, picks a generation number no directory has yet and marks that
generation as being written), lets its tasks write parts into the
generation, then commits by replacing ``manifest.json`` (atomically: a local
rename, or a single object put): a generation is visible only once the
manifest names it. Only then are the previous generation's files removed. A
failed export removes the files of its own generation (nothing a manifest of
ours does not name, nothing outside its generation); a killed one leaves its
generation marked as staging, which the next export reports and skips.

Local targets are locked with ``flock`` on ``OUT/.lock`` (exports take turns)
and compared with the corpus root by device and inode. Object stores have no
lock: an export refuses to commit when another one committed since it began.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from subagent_catalog.outputs import inside, open_output, output_failure
from subagent_catalog.store.layout import GENERATION_DIR, LOCK, MANIFEST, STAGING_MARKER, ArchiveError
from subagent_catalog.store.location import Location
from subagent_catalog.store.manifest import MAX_MANIFEST_BYTES, parse_manifest

OUR_FILE = re.compile(
    r"gen-\d{6}/(?:(?:sessions|descriptors|problems|events|facts)/project_dir=[A-Za-z0-9._~-]{1,200}"
    r"|_walk|_names|_scratch|facts)/part-\d{6}(?:-\d{4})?\.parquet"
)
"""Files an export of ours writes into a generation (and may remove from one it abandons)."""


def refuse_overlap(target: str, root: str) -> None:
    """Neither the archive inside the corpus nor the corpus inside the archive (by device and inode).

    Raises:
        ArchiveError: they overlap.

    Examples:
        >>> import tempfile
        >>> base = tempfile.mkdtemp()
        >>> refuse_overlap(os.path.join(base, "out"), os.path.join(base, "corpus"))
    """
    if inside(target, root):
        raise ArchiveError(
            f"archive target {target!r} lies inside the corpus root {root!r}",
            hint="corpora are read-only: write the archive outside the root",
        )
    if os.path.isdir(target) and inside(root, target):
        raise ArchiveError(
            f"the corpus root {root!r} lies inside the archive target {target!r}",
            hint="write the archive to a directory that does not contain the corpus",
        )


@dataclass
class Claim:
    """The target's state when this export took it."""

    location: Location
    manifest: dict[str, Any] | None
    generation: int
    stale: list[str]

    @property
    def data_dir(self) -> str:
        """The generation this export writes."""
        return f"gen-{self.generation:06d}"


def read_manifest(location: Location) -> dict[str, Any] | None:
    """The target's validated manifest, or ``None`` when it has none.

    Raises:
        ArchiveError: the manifest is unreadable, not ours, or invalid.

    Examples:
        >>> import tempfile
        >>> read_manifest(Location(tempfile.mkdtemp())) is None
        True
    """
    try:
        data = location.read(MANIFEST, limit=MAX_MANIFEST_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise ArchiveError(
            f"cannot read {location.full(MANIFEST)!r}: {error.strerror or error}",
            hint="check the path, its permissions and the storage options",
        ) from None
    return parse_manifest(data, where=location.full(MANIFEST))


def _staging(location: Location, name: str) -> bool:
    """A generation directory an interrupted export of ours left (it holds the staging marker)."""
    if location.local:
        folder = location.full(name)
        return not os.path.islink(folder) and os.path.isfile(os.path.join(folder, STAGING_MARKER))
    return location.exists(f"{name}/{STAGING_MARKER}")


def inspect_target(location: Location) -> Claim:
    """The target's manifest and generations; refuses a location that is not (yet) an archive.

    Raises:
        ArchiveError: foreign data, or a manifest that is not ours.

    Examples:
        >>> import tempfile
        >>> inspect_target(Location(tempfile.mkdtemp())).data_dir
        'gen-000001'
    """
    manifest = read_manifest(location)
    try:
        names = location.list_names("")
    except OSError as error:
        raise output_failure(location.url, error, action="list") from None
    generations = [name for name in names if GENERATION_DIR.fullmatch(name)]
    if manifest is None:
        foreign = [n for n in names if n != LOCK and not (n in generations and _staging(location, n))]
        if foreign:
            raise ArchiveError(
                f"archive target {location.url!r} is a non-empty directory without an archive manifest "
                f"(it holds {foreign[0]!r})",
                hint="pass a new or empty directory, or an existing archive to update",
            )
    current = manifest["data_dir"] if manifest else None
    stale = [name for name in generations if name != current and _staging(location, name)]
    numbers = [int(name[4:]) for name in generations]
    generation = max([manifest["generation"] if manifest else 0, *numbers]) + 1
    return Claim(location, manifest, generation, stale)


@contextlib.contextmanager
def claim_target(location: Location, root: str) -> Iterator[Claim]:
    """Create (if new), check and lock the target for one export; the generation is marked as staging.

    Raises:
        ArchiveError: the target overlaps the corpus, is not a directory, holds foreign data, or another
            export holds it.
        OutputError: it cannot be created.
    """
    if not location.local:
        claim = inspect_target(location)
        try:
            location.write_new(f"{claim.data_dir}/{STAGING_MARKER}", b"")
        except OSError as error:
            raise output_failure(location.full(claim.data_dir), error, action="write the archive") from None
        yield claim
        return
    import fcntl

    target = location.url
    if os.path.lexists(target) and not os.path.isdir(target):
        raise ArchiveError(f"archive target {target!r} is not a directory", hint="pass a new or archive directory")
    refuse_overlap(target, root)
    if os.path.isdir(target):
        inspect_target(location)  # foreign data is refused before anything (even the lock file) is created
    try:
        os.makedirs(target, exist_ok=True)
        lock = os.open(os.path.join(target, LOCK), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise output_failure(target, error, action="create the archive") from None
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ArchiveError(
                f"another export is writing to {target!r}",
                hint="wait for it to finish (exports into one archive take turns), or export elsewhere",
            ) from None
        refuse_overlap(target, root)
        claim = inspect_target(location)
        try:
            os.mkdir(location.full(claim.data_dir))
            os.close(os.open(location.full(f"{claim.data_dir}/{STAGING_MARKER}"), os.O_WRONLY | os.O_CREAT | os.O_EXCL))
        except OSError as error:
            raise output_failure(target, error, action="write the archive") from None
        yield claim
    finally:
        os.close(lock)


def commit(claim: Claim, manifest: dict[str, Any], *, root: str) -> None:
    """Make the new generation visible: replace the manifest (atomically), then drop the staging marker.

    Raises:
        ArchiveError: (object stores) another export committed since this one began.
        OutputError: the manifest cannot be written.

    Examples:
        >>> import tempfile
        >>> here = Location(tempfile.mkdtemp())
        >>> claim = inspect_target(here)
        >>> here.write_new(f"{claim.data_dir}/{STAGING_MARKER}", b"")
        >>> commit(claim, {"generation": claim.generation}, root=tempfile.mkdtemp())
        >>> json.loads(here.read("manifest.json", limit=1000)), here.list_files(claim.data_dir)
        ({'generation': 1}, [])
    """
    location = claim.location
    text = json.dumps(manifest, indent=1, ensure_ascii=True) + "\n"
    if location.local:
        with open_output(location.full(MANIFEST), protected=[root]) as handle:
            handle.write(text)
    else:
        now = read_manifest(location)
        before = claim.manifest["generation"] if claim.manifest else None
        if (now["generation"] if now else None) != before:
            raise ArchiveError(
                f"another export committed generation {now['generation'] if now else None} to {location.url!r} "
                "while this one ran",
                hint="exports into one object-store archive must not overlap: run them one after another",
            )
        try:
            location.put(MANIFEST, text.encode("ascii"))
        except OSError as error:
            raise output_failure(location.full(MANIFEST), error, action="write the archive") from None
    location.delete(f"{claim.data_dir}/{STAGING_MARKER}")


def remove_files(location: Location, data_dir: str, names: list[str]) -> None:
    """Remove the named files of one generation (never anything outside it), then its emptied directories.

    Examples:
        >>> import tempfile
        >>> here = Location(tempfile.mkdtemp())
        >>> here.write_new("gen-000001/a/part-000001.parquet", b"x")
        >>> remove_files(here, "gen-000001", ["gen-000001/a/part-000001.parquet"])
        >>> os.listdir(here.url)
        []
    """
    for name in names:
        if name.startswith(data_dir + "/"):
            location.delete(name)
    location.delete(f"{data_dir}/{STAGING_MARKER}")
    if not location.local:
        return
    base = location.full(data_dir)
    if os.path.islink(base) or not os.path.isdir(base):
        return
    for folder, _dirs, _files in os.walk(base, topdown=False):
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def discard(claim: Claim) -> None:
    """Remove what this export wrote into its generation (files of our layout only, reported or not).

    Examples:
        >>> import tempfile
        >>> here = Location(tempfile.mkdtemp())
        >>> claim = inspect_target(here)
        >>> here.write_new(f"{claim.data_dir}/sessions/project_dir=p/part-000001-0000.parquet", b"x")
        >>> here.write_new(f"{claim.data_dir}/notes.txt", b"not ours")
        >>> discard(claim)
        >>> here.list_files(claim.data_dir)
        ['gen-000001/notes.txt']
    """
    location = claim.location
    try:
        ours = [name for name in location.list_files(claim.data_dir) if OUR_FILE.fullmatch(name)]
    except OSError:
        ours = []
    remove_files(location, claim.data_dir, ours)


def manifest_files(manifest: dict[str, Any]) -> list[str]:
    """Every data file a manifest names.

    Examples:
        >>> manifest_files({"tables": {"sessions": {"files": ["a"]}}, "fingerprints": {"files": ["b"]}})
        ['a', 'b']
    """
    tables = manifest["tables"]
    return [name for entry in (*tables.values(), manifest["fingerprints"]) for name in entry["files"]]
