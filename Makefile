# Two entry points (see README): `make demo` runs the main job, `make test` runs the tests.
# Both create .venv and build nitro (C++ variants included) on first use or after a change.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.nitro-installed
# nitro/*/__init__.py: the editable install maps each module to its file, so a module that
# becomes a package (nitro/refine.py -> nitro/refine/) needs the install made again
SOURCES := pyproject.toml CMakeLists.txt $(wildcard variants_cpp/* microbench/* proxies/* nitro/*.cpp nitro/*.hpp nitro/*/__init__.py)

.PHONY: demo test install clean

$(STAMP): $(SOURCES)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet scikit-build-core pybind11
	$(BIN)/python -m pip install --quiet --no-build-isolation -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/nitro demo $(ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest $(ARGS)

clean:
	rm -rf $(VENV) build
