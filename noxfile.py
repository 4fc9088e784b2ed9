"""Sessions: `nox -s tests`, `nox -s lint`, `nox -s check`."""

import nox

nox.options.sessions = ["tests"]


@nox.session
def tests(session):
    session.install("-e", ".[test,examples]", "torch==2.13.0")
    session.run("pytest", "-n", "2", "-q", *session.posargs)


@nox.session
def lint(session):
    session.install("ruff==0.17.6", "mypy==2.4.1", "-e", ".")
    session.run("ruff", "check", "src", "tests", "examples", "benchmarks", "docs", "noxfile.py")
    session.run("ruff", "format", "--check", "src", "tests", "examples", "benchmarks", "docs", "noxfile.py")
    session.run("python", "-m", "mypy")


@nox.session
def check(session):
    session.install("-e", ".")
    session.run("python", "-m", "jaxderiv", "check", *session.posargs)
