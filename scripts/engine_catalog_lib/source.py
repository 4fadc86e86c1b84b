# Copyright: inferops.serving contributors
# GPL-3.0-or-later (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The parsed modules of one release, with names resolved through imports."""
from __future__ import annotations

import ast
import os
import sys


class Source:
    """The parsed modules of one release; names resolved through ``from ... import``."""

    def __init__(self, root):
        self.root = root
        self.modules = {}
        self.read = set()

    def path(self, module):
        base = os.path.join(self.root, *module.split("."))
        for candidate in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(candidate):
                return candidate
        return None

    def module(self, module):
        """``{"tree", "names", "imports", "name"}`` of ``module``, or None when absent."""
        if module in self.modules:
            return self.modules[module]
        path = self.path(module)
        if path is None:
            self.modules[module] = None
            return None
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), path)
        self.read.add(os.path.relpath(path, self.root))
        names, imports, stars, functions = {}, {}, [], {}
        package = module if path.endswith("__init__.py") else module.rpartition(".")[0]

        def scan(body):
            for node in body:
                if isinstance(node, ast.FunctionDef):
                    functions[node.name] = node
                elif isinstance(node, ast.ClassDef):
                    names[node.name] = node
                elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    names[node.targets[0].id] = node.value
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                    names[node.target.id] = node.value
                elif sys.version_info >= (3, 12) and isinstance(node, ast.TypeAlias):
                    names[node.name.id] = node.value
                elif isinstance(node, ast.ImportFrom):
                    base = node.module or ""
                    if node.level:
                        parts = package.split(".")
                        parts = parts[:len(parts) - node.level + 1]
                        base = ".".join(parts + ([node.module] if node.module else []))
                    for alias in node.names:
                        if alias.name == "*":
                            stars.append(base)
                        else:
                            imports[alias.asname or alias.name] = (base, alias.name)
                elif isinstance(node, (ast.If, ast.Try)):
                    scan(node.body)
                    for handler in getattr(node, "handlers", []):
                        scan(handler.body)
                    scan(node.orelse)

        scan(tree.body)
        self.modules[module] = {"tree": tree, "names": names, "imports": imports, "stars": stars, "name": module,
                                "functions": functions}
        return self.modules[module]

    def lookup(self, module, name, depth=0):
        """``(module, node)`` that ``name`` means in ``module``, following imports; None if unknown."""
        info = self.module(module)
        if info is None or depth > 12:
            return None
        if name in info["names"]:
            return module, info["names"][name]
        if name in info["imports"]:
            source, original = info["imports"][name]
            found = self.lookup(source, original, depth + 1)
            if found is None and self.module(source + "." + original) is not None:
                return source + "." + original, None
            return found
        for star in info["stars"]:
            found = self.lookup(star, name, depth + 1)
            if found is not None:
                return found
        return None
