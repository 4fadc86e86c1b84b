# SPDX-License-Identifier: GPL-3.0-or-later
"""host_files: a role's small files and directories in one module run, on a real temporary tree."""
from __future__ import annotations

import grp
import os
import pwd
import stat

import pytest

from ansible_collections.inferops.serving.plugins.module_utils._host_files import FilesError, normalise, plan_files
from ansible_collections.inferops.serving.plugins.modules import host_files

USER = pwd.getpwuid(os.getuid()).pw_name
GROUP = grp.getgrgid(os.getgid()).gr_name


def entries(root):
    return [
        {"path": str(root / "etc"), "state": "directory", "mode": "0700", "owner": USER, "group": GROUP,
         "keep_existing": False},
        {"path": str(root / "etc" / "srv.sh"), "content": "#!/bin/sh\nexec docker run x\n", "mode": "0755",
         "owner": USER, "group": GROUP},
        {"path": str(root / "etc" / "srv.env"), "state": "absent"},
    ]


def test_creates_then_changes_nothing(run_module, tmp_path):
    failed, result = run_module(host_files, {"files": entries(tmp_path)})
    assert not failed and result["changed"]
    assert result["changed_paths"] == [str(tmp_path / "etc"), str(tmp_path / "etc" / "srv.sh")]
    assert (tmp_path / "etc" / "srv.sh").read_text() == "#!/bin/sh\nexec docker run x\n"
    assert stat.S_IMODE(os.stat(tmp_path / "etc").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(tmp_path / "etc" / "srv.sh").st_mode) == 0o755
    failed, result = run_module(host_files, {"files": entries(tmp_path)})
    assert not failed and not result["changed"] and result["changed_paths"] == []
    assert [step["action"] for step in result["files"]] == ["none", "none", "none"]


def test_content_mode_and_removal_are_each_noticed(run_module, tmp_path):
    run_module(host_files, {"files": entries(tmp_path)})
    (tmp_path / "etc" / "srv.sh").write_text("edited by hand\n")
    os.chmod(tmp_path / "etc", 0o755)
    (tmp_path / "etc" / "srv.env").write_text("HF_TOKEN=x\n")
    failed, result = run_module(host_files, {"files": entries(tmp_path)}, diff=True)
    assert not failed
    steps = {os.path.basename(s["path"]): s for s in result["files"]}
    assert steps["etc"]["action"] == "attributes" and steps["etc"]["reasons"] == ["mode 0755 -> 0700"]
    assert steps["srv.sh"]["action"] == "write" and steps["srv.sh"]["reasons"] == ["content"]
    assert steps["srv.env"]["action"] == "remove"
    assert not (tmp_path / "etc" / "srv.env").exists()
    assert (tmp_path / "etc" / "srv.sh").read_text() == "#!/bin/sh\nexec docker run x\n"
    assert stat.S_IMODE(os.stat(tmp_path / "etc").st_mode) == 0o700
    assert {d["before_header"] for d in result["diff"]} == {str(tmp_path / "etc" / "srv.sh"), str(tmp_path / "etc" / "srv.env")}


def test_an_existing_shared_directory_keeps_its_mode_and_owner(run_module, tmp_path):
    """Issue 25, finding 8: a 1777 textfile directory became 0755 (and root's), locking out
    node_exporter's other writers. A directory that exists is left as found unless the entry says
    keep_existing: false; one that is created gets the entry's mode."""
    shared = tmp_path / "textfile_collector"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    wanted = [{"path": str(shared), "state": "directory", "mode": "0755", "owner": USER, "group": GROUP},
              {"path": str(tmp_path / "new"), "state": "directory", "mode": "0750", "owner": USER, "group": GROUP}]
    failed, result = run_module(host_files, {"files": wanted})
    assert not failed and result["changed_paths"] == [str(tmp_path / "new")]
    assert [s["action"] for s in result["files"]] == ["none", "mkdir"]
    assert stat.S_IMODE(os.stat(shared).st_mode) == 0o1777
    assert stat.S_IMODE(os.stat(tmp_path / "new").st_mode) == 0o750


def test_check_mode_reports_and_writes_nothing(run_module, tmp_path):
    failed, result = run_module(host_files, {"files": entries(tmp_path)}, check_mode=True)
    assert not failed and result["changed"] and len(result["changed_paths"]) == 2
    assert not (tmp_path / "etc").exists()


def test_a_directory_where_a_file_is_wanted_fails_before_anything_is_written(run_module, tmp_path):
    (tmp_path / "etc").mkdir(mode=0o700)
    (tmp_path / "etc" / "srv.sh").mkdir()
    wanted = [{"path": str(tmp_path / "first"), "state": "directory", "mode": "0755", "owner": USER, "group": GROUP}]
    failed, result = run_module(host_files, {"files": wanted + entries(tmp_path)})
    assert failed and "srv.sh should be a file but is a directory" in result["msg"]
    assert not (tmp_path / "first").exists()


@pytest.mark.parametrize("entry, message", [
    ({"path": "relative/x", "content": "", "mode": "0644"}, "expected an absolute path"),
    ({"path": "/a/../b", "content": "", "mode": "0644"}, "expected an absolute path"),
    ({"path": "/a", "content": "x"}, "needs an explicit mode"),
    ({"path": "/a", "content": "x", "mode": "rw-r--r--"}, "expected an octal string"),
    ({"path": "/a", "mode": "0644"}, "needs its content as a string"),
    ({"path": "/a", "state": "directory", "content": "x", "mode": "0755"}, "only a file has content"),
    ({"path": "/a", "state": "link", "mode": "0755"}, "expected one of file, directory, absent"),
    ({"path": "/a", "content": "x", "mode": "0644", "src": "x"}, "unknown keys src"),
    ({"path": "/a", "content": "x", "mode": "0644", "keep_existing": True}, "for a directory only"),
    ({"path": "/a", "state": "directory", "mode": "0755", "keep_existing": "no"}, "expected true or false"),
])
def test_bad_entries_name_the_entry_and_the_fix(entry, message):
    with pytest.raises(FilesError, match=message):
        normalise([entry])


def test_a_path_listed_twice_is_refused():
    with pytest.raises(FilesError, match="listed twice"):
        normalise([{"path": "/a", "state": "absent"}, {"path": "/a/", "state": "absent"}])


def test_owner_difference_is_an_attribute_change():
    wanted = normalise([{"path": "/x", "content": "a", "mode": "0644", "owner": "root", "group": "root"}])
    seen = {"/x": {"kind": "file", "mode": 0o644, "uid": 1000, "gid": 1000, "content": b"a"}}
    assert plan_files(wanted, seen, {("root", "root"): (0, 0)}) == [
        {"path": "/x", "action": "attributes", "reasons": ["owner 1000:1000 -> 0:0"]}]
