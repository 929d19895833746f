"""The README's commands and paths are the library's: every `keras-rnmt` command it shows
parses with the CLI's own parser (and a `train` command's overrides name config fields), and
every file or folder of this repository it names exists. Parsing only; nothing is run."""

import pathlib
import re
import shlex

import pytest

from keras_rnmt.cli import build_parser, load_recipe, parse_overrides

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
# Text and argument parsing only, the same under every backend: the tensorflow pass runs it.
pytestmark = pytest.mark.backends("tensorflow")

SUBCOMMANDS = ("train", "translate", "evaluate", "average", "export", "plot", "quickstart")


def _shell_lines(text):
    """The command lines of the ```bash blocks, continuations joined, comments dropped."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line:
                lines.append(line)
    return lines


def _cli_commands(text):
    """`keras-rnmt SUBCOMMAND ...` in the shell blocks and in inline code spans."""
    spans = [span for span in re.findall(r"`([^`\n]+)`", text) if span.startswith("keras-rnmt ")]
    commands = [line for line in _shell_lines(text) if line.startswith("keras-rnmt ")] + spans
    # A bare `keras-rnmt train` names the command; one with arguments is an invocation.
    return [command for command in commands
            if len(command.split()) > 2 and command.split()[1] in SUBCOMMANDS]


def _repository_paths(text):
    """Paths in code spans that start at one of the repository's top-level folders. Excluded:
    globs and placeholders in capitals (`benchmarks/runs/NAME-seedS/`), and what commands make
    (`benchmarks/work/`, `saved_models/...`, hidden folders such as `benchmarks/.joeynmt-venv`)."""
    paths = set()
    for span in re.findall(r"`([^`\n]+)`", text):
        for word in span.split():
            word = word.rstrip(",;:)").split("::")[0]
            if (re.match(r"(keras_rnmt|recipes|benchmarks|tests|saved_models)/", word)
                    and not re.search(r"[*{}]|[A-Z]{3,}|/\.", word)
                    and not word.startswith(("benchmarks/work/", "saved_models/"))):
                paths.add(word)
    return sorted(paths)


COMMANDS = _cli_commands(README)
PATHS = _repository_paths(README)


def test_the_readme_has_commands_and_paths_to_check():
    # Guards the extraction above: an empty list would make the tests below pass vacuously.
    assert {command.split()[1] for command in COMMANDS} >= {
        "train", "translate", "evaluate", "plot", "export", "average"}
    assert "recipes/multi30k_plateau.py" in PATHS and "keras_rnmt/loop.py" in PATHS


@pytest.mark.parametrize("command", COMMANDS)
def test_every_keras_rnmt_command_in_the_readme_parses(command):
    argv = shlex.split(command)[1:]
    args, extra = build_parser().parse_known_args(argv)
    if args.command == "train":
        # What `keras-rnmt train` does with the rest: config overrides, checked by name.
        load_recipe(str(ROOT / args.recipe)).config().override(parse_overrides(extra))
    else:
        assert not extra, f"{command!r}: unrecognized arguments {extra}"


@pytest.mark.parametrize("path", PATHS)
def test_every_repository_path_in_the_readme_exists(path):
    assert (ROOT / path).exists(), f"README.md names {path}, which is not in the repository"
