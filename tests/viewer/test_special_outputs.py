"""Exports aimed at something that is not a regular file: a character device or a FIFO (direct,
or through a link such as /proc/self/fd/N) is written to as a stream and stays what it was; a
folder or a socket is refused with one error line. Nothing of the kind is ever replaced."""

import os
import socket
import stat
import threading

import pytest

from viewer_helpers import fixture

PROFILE = fixture("nested_scopes.hatchet")
EXPORTS = ("--html", "--speedscope", "--collapsed")


def reader_of(opener):
    """Reads what `opener()` opens to its end on a thread; returns (thread, chunks)."""
    chunks = []

    def drain():
        with os.fdopen(opener(), "rb") as stream:
            chunks.append(stream.read())

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    return thread, chunks


@pytest.mark.parametrize("option", EXPORTS)
def test_a_link_to_dev_null_stays_a_link_and_dev_null_a_device(viewer, tmp_path, option):
    link = tmp_path / "out"
    os.symlink("/dev/null", link)
    status, _, err = viewer(option, link, PROFILE)
    assert status == 0, err
    assert os.path.islink(link) and os.readlink(link) == "/dev/null"
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.parametrize("option", EXPORTS)
def test_a_character_device_node_is_written_to_not_replaced(viewer, tmp_path, option):
    device = tmp_path / "n"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # what /dev/null is
    except PermissionError:
        os.symlink("/dev/null", device)  # without the right to make one, the same device by a link
    status, _, err = viewer(option, device, PROFILE)
    assert status == 0, err
    assert stat.S_ISCHR(os.stat(device).st_mode)
    assert os.stat(device).st_size == 0


@pytest.mark.parametrize("option", EXPORTS)
def test_a_fifo_gets_the_whole_export_and_stays_a_fifo(viewer, tmp_path, option):
    fifo, copy = tmp_path / "fifo", tmp_path / "copy"
    os.mkfifo(fifo)
    thread, chunks = reader_of(lambda: os.open(fifo, os.O_RDONLY))
    status, _, err = viewer(option, fifo, PROFILE)
    assert status == 0, err
    thread.join(10)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert viewer(option, copy, PROFILE)[0] == 0
    assert b"".join(chunks) == copy.read_bytes() and copy.stat().st_size > 0


def test_a_link_to_this_process_fd_writes_to_the_pipe_behind_it(viewer, tmp_path):
    read_end, write_end = os.pipe()
    thread, chunks = reader_of(lambda: read_end)
    link = tmp_path / "stdout"
    os.symlink(f"/proc/self/fd/{write_end}", link)
    try:
        status, _, err = viewer("--collapsed", link, PROFILE)
    finally:
        os.close(write_end)
    assert status == 0, err
    thread.join(10)
    assert b"".join(chunks).count(b"\n") > 1
    assert os.path.islink(link)


def test_a_folder_or_a_socket_is_refused_and_left_alone(viewer, tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(tmp_path / "sock"))
        for target in (folder, tmp_path / "sock"):
            before = os.lstat(target).st_mode
            status, _, err = viewer("--html", target, PROFILE)
            assert status == 2 and "error: cannot write" in err and "not a regular file" in err
            assert os.lstat(target).st_mode == before
    assert list(folder.iterdir()) == []
