# SPDX-License-Identifier: GPL-3.0-or-later
"""The lab targets' speed-up, not a product file: Ansible runs each module from a zip it sends
with the task (AnsiballZ), and Python's zipimport compiles every file of it from source, every
task (ansible.module_utils.basic and what it imports: about 40% of a `command: true` task's CPU on
a target). Here the compiled code is kept under CACHE, keyed by the SHA-256 of the Python
magic number, the file's path inside the zip and its source, and given the file name this run's
zip has (tracebacks read as they would without the cache). A key names the source it was compiled
from, so a cached entry is never stale; a cache that cannot be read or written is skipped. Real
hosts have no such cache: the code that runs is the same, only its compile is saved.
Installed by tests/lab/setup/target.Dockerfile as the interpreter's sitecustomize."""
import zipimport

CACHE = "/var/cache/inferops-lab/pyc"
_MARK = "_payload.zip"
_compile = zipimport._compile_source


def _refiled(code, filename):
    import types
    consts = tuple(_refiled(c, filename) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def cached_compile(pathname, source):
    head, mark, inner = pathname.partition(_MARK)
    if not mark:
        return _compile(pathname, source)
    import hashlib
    import importlib.util
    import marshal
    import os
    key = hashlib.sha256(importlib.util.MAGIC_NUMBER + inner.encode() + b"\0" + source).hexdigest()
    path = os.path.join(CACHE, key)
    try:
        with open(path, "rb") as handle:
            return _refiled(marshal.load(handle), pathname)
    except (OSError, EOFError, ValueError, TypeError):
        pass
    code = _compile(pathname, source)
    try:
        os.makedirs(CACHE, mode=0o700, exist_ok=True)
        temporary = "%s.%d" % (path, os.getpid())
        with open(temporary, "wb") as handle:
            marshal.dump(code, handle)
        os.replace(temporary, path)
    except OSError:
        pass
    return code


zipimport._compile_source = cached_compile
