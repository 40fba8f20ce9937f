"""launch_log.py: a session's launch log shared by several users over the native session's log:
on with the first user, kept whole while any user still reads it, freed with the last."""
import types

import pytest

from flagtree.profiler import _native, launch_log


@pytest.fixture
def session():
    slot = _native.session.session_create(0, 0)
    _native.session.session_set_active(slot, True)
    made = types.SimpleNamespace(slot=slot, id=1000 + slot)
    yield made
    for user in launch_log.users(made):
        launch_log.let_go(made, user)
    _native.session.session_remove(slot)


def _launch(correlation):
    _native.testing.launch(correlation, False)
    _native.testing.record(correlation, f"k{correlation}", correlation * 10, correlation * 10 + 5, 0)


def _logged(session):
    return _native.session.launch_log_entries(session.slot)["correlation"]


def test_a_second_user_neither_empties_the_log_nor_frees_it_for_the_first(session):
    launch_log.keep(session, "tianshu")
    _launch(1)
    launch_log.keep(session, "kernel_scopes")  # natively, turning the log on again empties it
    launch_log.keep(session, "kernel_scopes")
    _launch(2)
    assert _logged(session) == [1, 2]
    launch_log.let_go(session, "kernel_scopes")  # done first: the other still reads every launch
    launch_log.let_go(session, "kernel_scopes")
    _launch(3)
    assert _logged(session) == [1, 2, 3] and launch_log.users(session) == {"tianshu"}
    launch_log.let_go(session, "tianshu")
    assert _logged(session) == [] and launch_log.users(session) == set()
    _launch(4)  # off: nothing logged once the last user is done
    launch_log.keep(session, "tianshu")
    assert _logged(session) == []


def test_a_user_that_never_kept_the_log_cannot_free_it(session):
    launch_log.keep(session, "tianshu")
    _launch(7)
    launch_log.let_go(session, "kernel_scopes")
    assert _logged(session) == [7]


def test_the_next_session_in_a_slot_starts_its_own_users(session):
    launch_log.keep(session, "kernel_scopes")  # never let go (a session that failed before its finalize)
    _launch(1)
    successor = types.SimpleNamespace(slot=session.slot, id=session.id + 1)
    launch_log.keep(successor, "tianshu")
    assert launch_log.users(successor) == {"tianshu"} and launch_log.users(session) == set()
    launch_log.let_go(session, "kernel_scopes")  # the earlier session's let-go no longer reaches the slot
    assert launch_log.users(successor) == {"tianshu"}
    assert _logged(successor) == []  # the successor's log starts empty
    _launch(2)
    assert _logged(successor) == [2]
