"""A sandboxed program runs as ``python main.py`` would run it: its name, file, arguments, input,
tracebacks and syntax errors are the ones a user expects."""

from __future__ import annotations

from sandbox_checks import assert_clean

from resonance_os.verify import Outcome
from resonance_os.verify.sandbox import launcher_reports

PROGRAM = """import sys
print(__name__, __file__, sys.argv, sys.modules["__main__"].__dict__ is globals())
print(input()[::-1])
class Point:
    pass
print(Point.__module__, exit is sys.exit)
"""


def test_a_program_runs_as_the_main_module_reading_its_input(sandbox):
    execution = sandbox.run(PROGRAM, "olleh\n")
    assert execution.outcome is None and execution.exit_code == 0, execution
    assert execution.stdout.splitlines() == ["__main__ main.py ['main.py'] True", "hello", "__main__ True"]
    assert_clean(sandbox)


def test_an_uncaught_exception_is_a_runtime_error_with_its_traceback(sandbox):
    execution = sandbox.run("x = 1\n\ndef f():\n    return 1 / 0\n\nf()\n")
    assert execution.outcome is Outcome.RUNTIME_ERROR
    assert 'File "main.py", line 4, in f' in execution.stderr
    assert execution.detail == "ZeroDivisionError: division by zero"


def test_a_syntax_error_names_its_line(sandbox):
    execution = sandbox.run("print(1)\nprint(\n")
    assert execution.outcome is Outcome.RUNTIME_ERROR
    assert 'File "main.py", line 2' in execution.stderr and "SyntaxError" in execution.detail


def test_sys_exit_sets_the_exit_code(sandbox):
    execution = sandbox.run("import sys\nprint('partial')\nsys.exit(3)\n")
    assert execution.exit_code == 3 and execution.stdout == "partial\n"


def test_a_status_line_cut_short_is_not_read_as_a_report():
    status = b"{'kind': 'isolation', 'namespaces': True}\n{'kind': 'exit', 'exit_co"
    assert launcher_reports(status) == [{"kind": "isolation", "namespaces": True}]
