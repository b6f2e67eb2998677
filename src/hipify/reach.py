# Loaded as `sitecustomize` by the Python that runs a hipify script while some submodules of
# the checkout are still being written (rockbuild's `hipify: edits-submodules` fast path; see
# src/hipify/reach.rs). It records which of those submodules the script's Python code looks
# into or writes — opening, listing, stat-ing (os.path.exists and friends), creating, renaming
# or removing a path inside one — and which programs other than Python it starts (their reach
# cannot be seen), so that rockbuild knows whether the script ran before what it needed was
# there. It changes nothing the script sees, then hands over to the next `sitecustomize` on
# the path (Debian's, a venv's), as if it had never been here.
import os
import sys


def _install():
    watch = os.environ.get("ROCKBUILD_REACH_WATCH")
    log = os.environ.get("ROCKBUILD_REACH_LOG")
    if not watch or not log:
        return
    with open(watch, encoding="utf-8") as lines:
        names = [line.rstrip("\n") for line in lines if line.strip()]
    # Each watched directory by both spellings a path can take: as given (absolute) and with
    # symlinks resolved (os.getcwd() and os.path.abspath() give the latter).
    watched = {}
    for name in names:
        for spelling in {os.path.normpath(name), os.path.realpath(name)}:
            watched[spelling] = name
    if not watched:
        return
    prefix = os.path.commonpath(list(watched))
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    seen = set()
    busy = []
    cwd = [os.getcwd()]

    def record(line):
        if line not in seen:
            seen.add(line)
            os.write(fd, (line + "\n").encode("utf-8", "surrogateescape"))

    def check(path):
        if isinstance(path, int) or path is None:
            return
        try:
            path = os.fsdecode(os.fspath(path))
        except TypeError:
            return
        if not path.startswith("/"):
            path = os.path.join(cwd[0], path)
        path = os.path.normpath(path)
        if not path.startswith(prefix):
            return
        # The deepest watched directory holding the path (a submodule inside another).
        found = None
        for spelling, name in watched.items():
            if (path == spelling or path.startswith(spelling + "/")) and (
                found is None or len(spelling) > len(found[0])
            ):
                found = (spelling, name)
        if found is not None:
            record("reached " + found[1])

    def spawned(program, env):
        if isinstance(program, (list, tuple)):
            program = program[0] if program else ""
        try:
            program = os.fsdecode(os.fspath(program))
        except TypeError:
            program = str(program)
        base = os.path.basename(program.split(" ", 1)[0])
        # A Python child with this environment records its own reach.
        inherits = env is None or "ROCKBUILD_REACH_LOG" in env
        if not (inherits and (program == sys.executable or base.startswith("python"))):
            record("spawned " + base)

    one_path = {
        "open", "os.listdir", "os.scandir", "os.mkdir", "os.rmdir", "os.remove", "os.truncate",
        "os.utime", "os.chmod", "os.chown", "os.chflags", "os.getxattr", "os.listxattr",
        "os.setxattr", "os.removexattr", "shutil.rmtree", "glob.glob", "glob.glob/2",
    }
    two_paths = {"os.rename", "os.link", "os.symlink", "shutil.copyfile", "shutil.copymode",
                 "shutil.copystat", "shutil.copytree", "shutil.move"}

    def hook(event, args):
        if busy or not args:
            return
        busy.append(1)
        try:
            if event in one_path:
                check(args[0])
            elif event in two_paths:
                check(args[0])
                if len(args) > 1:
                    check(args[1])
            elif event == "os.chdir":
                cwd[0] = os.getcwd() if isinstance(args[0], int) else os.path.normpath(
                    os.path.join(cwd[0], os.fsdecode(os.fspath(args[0]))))
            elif event == "subprocess.Popen":  # (executable, args, cwd, env)
                spawned(args[0] if args[0] is not None else args[1], args[3])
            elif event in ("os.exec", "os.posix_spawn"):  # (path, argv, env)
                spawned(args[0], args[2])
            elif event == "os.spawn":  # (mode, path, args, env)
                spawned(args[1], args[3])
            elif event == "os.system":  # (command,): a shell
                spawned("sh", None)
        except Exception:
            record("untraceable " + event)
        finally:
            busy.pop()

    # Stat-like calls raise no audit event: wrapped where os.path and pathlib look them up.
    def wrap(function):
        def traced(path, *args, **kwargs):
            if not busy:
                busy.append(1)
                try:
                    check(path)
                except Exception:
                    record("untraceable " + function.__name__)
                finally:
                    busy.pop()
            return function(path, *args, **kwargs)

        traced.__name__ = function.__name__
        traced.__doc__ = function.__doc__
        return traced

    for name in ("stat", "lstat", "access", "readlink"):
        setattr(os, name, wrap(getattr(os, name)))
    sys.addaudithook(hook)
    record("started")


def _hand_over():
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    import importlib.machinery
    import importlib.util

    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_install()
_hand_over()
