#!/usr/bin/env bash
# Mutation testing as a benchmark (not a test): how many small changes to the code the unit tests
# notice. Runs mutmut (requirements-bench.txt) on a copy of the tracked files, prints the mutants
# that survived and the surviving ratio.
#
#   benchmarks/mutation.sh [file ...]     default: the files in FILES below
#
# Needs mutmut next to the unit test dependencies (a venv with requirements-dev.txt and
# requirements-bench.txt). MUTATION_JOBS sets the parallel test processes (default: CPUs); on a
# shared machine run one file at a time with MUTATION_JOBS=1. MUTATION_TESTS narrows the tests run
# against each mutant (space-separated paths, default tests/unit/plugins): fewer tests can only let
# more mutants survive, so a narrowed run's ratio is an upper bound of the full one.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
FILES=("plugins/module_utils/_log_records.py" "plugins/module_utils/_log_patterns.py"
       "plugins/module_utils/_log_scanner.py" "plugins/module_utils/_log_reading.py"
       "plugins/module_utils/_log_verdict.py" "plugins/module_utils/_startup_phases.py"
       "plugins/plugin_utils/_lint_context.py" "plugins/plugin_utils/_profile_lint.py" "plugins/plugin_utils/_profile.py"
       "plugins/modules/container_swap.py")
if [ "$#" -gt 0 ]; then FILES=("$@"); fi
jobs=${MUTATION_JOBS:-$(nproc)}
work=$(mktemp -d "${TMPDIR:-/tmp}/mutation.XXXXXX")
if [ -z "${MUTATION_KEEP:-}" ]; then
  trap 'rm -rf "$work"' EXIT
fi
# Laid out as ansible_collections/inferops/serving so that the module names mutmut derives from the
# file paths are the names the tests import.
coll="$work/ansible_collections/inferops/serving"
mkdir -p "$coll"
(
  cd "$root" || exit 1
  git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$coll" 2>/dev/null || true
)
rm -f "$coll/.venv"
cd "$work"
{
  echo "[mutmut]"
  echo "source_paths=ansible_collections"
  echo "only_mutate="
  for f in "${FILES[@]}"; do echo "    ansible_collections/inferops/serving/$f"; done
  echo "pytest_add_cli_args_test_selection="
  for t in ${MUTATION_TESTS:-tests/unit/plugins}; do echo "    ansible_collections/inferops/serving/$t"; done
  # the 100 MB and 50 MB tests prove size limits, not logic: they would dominate the run time
  echo "pytest_add_cli_args="
  echo "    -p"
  echo "    no:cacheprovider"
  echo "    -q"
  echo "    -k"
  echo "    not 100_mb and not 50_mb"
} > setup.cfg
# each property test on 10 fixed examples per mutant (tests/conftest.py), not Hypothesis' 100 random ones
export HYPOTHESIS_PROFILE=mutation
# Every test run of every mutant makes a pytest-of-<user>/pytest-N directory (the 100 MB logs of some
# tests included): thousands per run, 65 GB once. In the work directory they go with it.
mkdir -p "$work/tmp"
export TMPDIR="$work/tmp"
# MUTATION_MUTANTS: only these mutants (names or globs as mutmut prints them, space-separated), e.g. to
# re-run the survivors of an earlier run against new tests
read -r -a mutants <<< "${MUTATION_MUTANTS:-}"
mutmut run --max-children "$jobs" ${mutants[@]+"${mutants[@]}"} > run.log 2>&1 || { echo "mutmut run failed, see $work/run.log (MUTATION_KEEP=1 keeps it)"; tail -20 run.log; }
mutmut results --all true > results.txt 2>&1 || mutmut results > results.txt 2>&1 || true
total=$(grep -cE ': (killed|survived|no tests|timeout|suspicious|segfault|skipped|caught by type check)' results.txt || true)
survived=$(grep -cE ': (survived|no tests)' results.txt || true)
echo "survivors (mutmut show <name> for the diff):"
grep -E ': (survived|no tests)' results.txt || true
grep -E ': (survived|no tests)' results.txt | sed 's/:.*//' | while read -r name; do
  mutmut show "$name" 2>/dev/null | sed 's/^/    /' || true
done
echo "mutants: $total, survived: $survived, surviving ratio: $(awk -v s="$survived" -v t="$total" 'BEGIN { if (t) printf "%.1f%%", 100 * s / t; else print "n/a" }')"
