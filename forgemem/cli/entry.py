"""The `forgemem` console script.

`forgemem hook claude-code` runs on every prompt an agent sends, and git runs
`forgemem diff-driver` / `merge-driver` once per memory file of a diff or a merge,
so they skip the CLI framework (typer and rich cost about 60 ms to import), and so does a plain
`forgemem recall QUERY` that a running recall server answers (`quick`); everything else goes to
`forgemem.cli`, loading only the module of the command it runs (`dispatch`).
"""

from __future__ import annotations

import sys


def run() -> None:
    from forgemem.spawn import enter_safe_mode

    enter_safe_mode()  # no Python process forgemem starts imports from the folder it runs in
    if sys.argv[1:] == ["hook", "claude-code"]:
        import os

        from forgemem.agents.claude_code import main_claude_code

        code = main_claude_code()
        # A recall given up on (over hook_timeout_ms) may still be running native code (ONNX
        # Runtime, FAISS) on its thread; tearing the interpreter down under it can abort the
        # process ("terminate called without an active exception"). Nothing is left to save.
        os._exit(code)
    args = sys.argv[1:]
    if (args[:1] == ["diff-driver"] and len(args) == 2 or args[:1] == ["merge-driver"] and len(args) == 5) \
            and not any(a.startswith("-") for a in args[1:]):
        # git runs these once per file of a diff or a merge: no CLI framework to load, nothing else to fail
        from forgemem.git import drivers

        sys.exit(drivers.main_textconv(args[1]) if args[0] == "diff-driver" else drivers.main_merge(*args[1:]))
    if "recall" in args[:7]:  # a warm recall: a running server answers, no CLI framework to load
        from forgemem.cli.quick import recall

        try:
            answered = recall(args)
        except KeyboardInterrupt:  # Ctrl-C while the server answers: as the full CLI ends, not a traceback
            from forgemem.cli.dispatch import INTERRUPTED

            sys.stderr.write(INTERRUPTED + "\n")
            sys.exit(130)
        if answered is not None:
            sys.exit(answered)
    from forgemem.cli.dispatch import main, module_for

    module = module_for(args)
    if module is None:
        from forgemem.cli.main import run as cli_run

        cli_run()
        return
    import importlib

    importlib.import_module(f"forgemem.cli.{module}")  # registers its commands: the others are not loaded
    sys.exit(main())
