# inferops.serving: the two commands are `make site` (the main job) and `make test` (every test).
SHELL := /bin/bash
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
INVENTORY ?= inventories/lab
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(BIN):$(PATH)

.PHONY: site test env lint sanity unit lab-up lab-fleet lab-down lab-tests bench mutation

## site: converge site.yml; with no INVENTORY=..., the local lab fleet (lab and fleet set up first)
site: env
	@if [ "$(INVENTORY)" = "inventories/lab" ]; then \
	  tests/lab/lab.sh up && ansible-playbook -i $(INVENTORY) tests/lab/fleet.yml; fi
	ansible-playbook -i $(INVENTORY) site.yml

## test: lint, ansible-test sanity, unit tests, then the lab (molecule scenarios, end to end)
test: env
	scripts/run-tests

env:
	scripts/bootstrap-python
	scripts/link-collection

lint: env
	ansible-lint
sanity: env
	scripts/sanity
unit: env
	pytest tests/unit -q
lab-up: env
	tests/lab/lab.sh up
lab-fleet: lab-up
	ansible-playbook -i inventories/lab tests/lab/fleet.yml
lab-tests: lab-up
	pytest tests -m lab -ra
lab-down:
	tests/lab/lab.sh down

## bench: the heavy benchmarks (not part of make test): log scan vs grep, swap downtime, the gateway's added latency, no-op converge
## before/after, the simulator's wall-clock pace with tight bounds, the watchdog under a 2-minute 64-request burst, a full load sweep (5 levels x 3 runs x 30 s)
## with the pinned load generator (.venv-loadgen, scripts/loadgen-env) against the engine simulator
bench: lab-fleet
	scripts/loadgen-env
	INFEROPS_BENCH_LEVELS=1,4,8,16,32 INFEROPS_BENCH_RUNS=3 INFEROPS_BENCH_SECONDS=30 \
	  INFEROPS_BENCH_BURST_REQUESTS=500 INFEROPS_BENCH_BURST_TIME_SCALE=0.1 pytest tests/bench -m bench -q -s
	python benchmarks/backend_assert_bench.py
	python benchmarks/rollout_swap_bench.py -i inventories/lab --host lab-spark --port 8101
	python benchmarks/gateway_latency_bench.py
	python benchmarks/noop_converge_bench.py
	INFEROPS_WATCHDOG_BURST_SECONDS=120 pytest tests/lab/test_watchdog.py -k burst -q
	pytest tests/lab/test_benchmark.py -m heavy -q
	INFEROPS_BENCH_QUIET=1 pytest tests/unit/lab/test_engine_sim_perf.py -k wall_clock -q

## mutation: the roles' failure paths (scripts/role-mutations: each planted bug must fail a unit test), then mutation
## testing (mutmut, requirements-bench.txt) of the log patterns, the profile lint, the launch script and the swap module
mutation: env
	scripts/role-mutations
	benchmarks/mutation.sh
