"""ntdd's defaults, in a module of their own: the pytest plugin needs them for
`--help` on every run, before anything else of ntdd is imported. And how
ntdd's own in-process pytest runs make sure they have that plugin."""

from typing import Any

DEFAULT_DEVICES = ("cpu", "cuda")
DEFAULT_TIMEOUT = 600.0  # seconds per notebook test, setup included
# Smoke runs (`--ntdd-smoke`): batches a DataLoader yields per pass, passes of a training
# loop, examples a Dataset yields to a training loop that iterates it itself, and the names
# whose integer values are capped at that many passes.
DEFAULT_SMOKE_BATCHES = 4
DEFAULT_SMOKE_EPOCHS = 2
DEFAULT_SMOKE_EXAMPLES = 16
DEFAULT_SMOKE_NAMES = ("epochs", "num_epochs", "n_epochs", "max_epochs", "max_steps", "max_iters")
# A loop or a DataLoader's pass is cut only where the rest of it would take at least this
# long (seconds, estimated from its first passes): a short training is run in full.
DEFAULT_SMOKE_MIN_SECONDS = 1.0
# Output checks (`--ntdd-outputs`): the significant digits the floats normaliser keeps, and
# the largest perceptual distance between a saved figure and the fresh one that passes.
DEFAULT_FLOAT_DIGITS = 6
DEFAULT_IMAGE_TOLERANCE = 1.25  # percent of the worst 32x32 square: `ntdd.outputs.images`

# The docs page of the `# TEST` grammar, where messages send someone who has no test yet.
WRITING_TESTS = "https://github.com/ntdd-dev/ntdd/blob/main/docs/writing-tests.md"

PLUGIN = "ntdd.plugin"  # the plugin's module; "ntdd" is the name its entry point gives it


class LoadsPlugin:
    """A plugin of ntdd's in-process pytest runs (`ntdd faults`, `%ntdd`): it loads
    ntdd's plugin into a run that has not loaded it.

    Where PYTEST_DISABLE_PLUGIN_AUTOLOAD is set, no entry point loads it. Giving
    `-p ntdd.plugin` instead would not do: where the entry point does load it,
    the same module would be registered under two names, which pluggy refuses.
    So the run looks once pytest has loaded what `-p`, the entry points and
    PYTEST_PLUGINS name, and before it reads `--ntdd` off the command line.
    `%ntdd`'s child process writes its own (`ntdd.kernel.saved`), since it must
    import nothing of ntdd before pytest does.
    """

    def pytest_load_initial_conftests(self, early_config: Any) -> None:
        manager = early_config.pluginmanager
        if not (manager.has_plugin("ntdd") or manager.has_plugin(PLUGIN)):
            manager.import_plugin(PLUGIN)
