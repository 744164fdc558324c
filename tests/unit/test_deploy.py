"""The deploy files, checked offline (docs/deploy.md "What the tests check").

Against their schemas: every Kubernetes manifest under deploy/k8s/ against the
Kubernetes JSON schemas that the ``kubernetes-validate`` wheel ships (strict: an
unknown field fails), the KEDA ScaledObject against the ScaledObject CRD schema (the
``cloudcoil.models.keda`` wheel's models, generated from KEDA's CRDs, made strict
here), and deploy/compose.yaml against the Compose Specification's JSON schema as the
``check-jsonschema`` wheel vendors it (compose-spec, Apache-2.0).

Against the code: commands are real ``turnkeep`` subcommands, probe paths are public
routes of the API, environment variables are turnkeep's settings, the Secret's keys are
the documented ones, selectors and named ports meet, beat is single. And the lock: it
covers pyproject's dependencies and its server extra within their ranges, and the
Dockerfile installs from it, copies every package and runs a turnkeep subcommand.
"""

from __future__ import annotations

import copy
import importlib.metadata
import json
import re
import shlex
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import kubernetes_validate
import pytest
import yaml
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
COMPOSE = DEPLOY / "compose.yaml"
DOCKERFILE = DEPLOY / "Dockerfile"
LOCK = ROOT / "requirements.lock"
DOCS = ROOT / "docs" / "deploy.md"

#: the oldest Kubernetes the manifests promise, and a recent one
K8S_VERSIONS = ("1.30.0", "1.33.0")
KEDA_API = "keda.sh/v1alpha1"
#: the image's user (deploy/Dockerfile), which every pod runs as
UID = 10001
SECRET = "turnkeep-secrets"
CONFIGMAP = "turnkeep-config"
#: where the lock's environment markers are evaluated: the image's Python on Linux
IMAGE_ENV = {
    "python_version": "3.11",
    "python_full_version": "3.11.0",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "os_name": "posix",
    "platform_machine": "x86_64",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
}


# --- reading the files -------------------------------------------------------------


def _yaml_docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _manifest_files() -> list[Path]:
    return sorted(p for p in K8S.rglob("*.yaml") if p.name != "kustomization.yaml")


def _manifests() -> list[tuple[Path, dict[str, Any]]]:
    return [(path, doc) for path in _manifest_files() for doc in _yaml_docs(path)]


def _applied() -> list[dict[str, Any]]:
    """The resources ``kubectl apply -k deploy/k8s`` creates."""
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    return [doc for name in kustomization["resources"] for doc in _yaml_docs(K8S / name)]


def _by_kind(kind: str, docs: list[dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    docs = _applied() if docs is None else docs
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def _pod_spec(doc: dict[str, Any]) -> dict[str, Any] | None:
    if doc["kind"] in ("Deployment", "Job", "StatefulSet", "DaemonSet"):
        spec: dict[str, Any] = doc["spec"]["template"]["spec"]
        return spec
    return None


def _selects(selector: dict[str, str], deployment: dict[str, Any]) -> bool:
    labels: dict[str, str] = deployment["spec"]["template"]["metadata"]["labels"]
    return selector.items() <= labels.items()


def _pods() -> Iterator[tuple[str, dict[str, Any]]]:
    for _, doc in _manifests():
        spec = _pod_spec(doc)
        if spec is not None:
            yield f"{doc['kind']}/{doc['metadata']['name']}", spec


def _containers() -> Iterator[tuple[str, dict[str, Any]]]:
    for where, spec in _pods():
        for container in spec.get("initContainers", []) + spec["containers"]:
            yield f"{where}/{container['name']}", container


def _compose() -> dict[str, Any]:
    # PyYAML resolves compose's `<<` merge keys and anchors as compose does
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return data


def _compose_turnkeep_services() -> dict[str, dict[str, Any]]:
    """The compose services that run the turnkeep image (built from deploy/Dockerfile)."""
    return {
        name: svc
        for name, svc in _compose()["services"].items()
        if svc.get("build", {}).get("dockerfile") == "deploy/Dockerfile"
    }


def _dockerfile() -> list[tuple[str, str]]:
    """(instruction, arguments), continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _lock() -> dict[str, tuple[Version, list[str]]]:
    """requirements.lock: canonical name -> (pinned version, hashes)."""
    text = re.sub(r"\\\n", " ", LOCK.read_text())
    pins: dict[str, tuple[Version, list[str]]] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        spec, *options = line.split()
        req = Requirement(spec)
        (pin,) = req.specifier
        assert pin.operator == "==", f"requirements.lock: {spec} is not pinned with =="
        name = canonicalize_name(req.name)
        assert name not in pins, f"requirements.lock pins {name} twice"
        hashes = [o.removeprefix("--hash=") for o in options if o.startswith("--hash=")]
        pins[name] = (Version(pin.version), hashes)
    return pins


# --- what the code says --------------------------------------------------------------


def _subcommands() -> set[str]:
    """turnkeep's subcommands, as its command line knows them (turnkeep/cli/)."""
    from turnkeep import cli

    app = getattr(cli, "app", None)
    if app is None:
        return set(cli.COMMANDS)
    import typer.main

    group = typer.main.get_command(app)
    return set(getattr(group, "commands", {}))


def _process_subcommands() -> set[str]:
    """The subcommands that become a service's process (``os.execve``: signals reach
    uvicorn or Celery directly), which every deployed role must be."""
    from turnkeep import cli

    return set(cli.COMMANDS)


def _known_env() -> set[str]:
    """Every TURNKEEP_* variable turnkeep reads: the settings' (runtime/settings.py
    ``variables()``, the model providers' keys among them) and the few names read
    straight from the environment in the packages' code."""
    from turnkeep.runtime.settings import variables

    names = set(variables())
    read = re.compile(r"""(?:environ\.get\(|getenv\(|environ\[)\s*["'](TURNKEEP_[A-Z0-9_]+)["']""")
    for package in _packages():
        for source in (ROOT / package).rglob("*.py"):
            names |= set(read.findall(source.read_text()))
    return names


def _packages() -> set[str]:
    """The folders the two distributions are built from: turnkeep, and the folders it
    links as its subpackages (pyproject.toml)."""
    links = {p.resolve().name for p in (ROOT / "turnkeep").iterdir() if p.is_symlink()}
    assert links >= {"api", "worker", "store", "runtime", "recovery"}
    return {"turnkeep", *links}


def _documented_secret_keys() -> set[str]:
    """The keys of docs/deploy.md's table of the Secret."""
    section = DOCS.read_text().split("### The Secret", 1)[1].split("\n### ", 1)[0]
    return set(re.findall(r"^\| `(TURNKEEP_[A-Z0-9_]+)` \|", section, re.MULTILINE))


def _command(container: dict[str, Any]) -> list[str]:
    return [*container.get("command", []), *container.get("args", [])]


def _turnkeep_commands() -> list[tuple[str, list[str]]]:
    """Every command line of the deploy files that starts turnkeep, with where it is."""
    found = [(where, _command(c)) for where, c in _containers()]
    found += [(f"compose {n}", s["command"]) for n, s in _compose_turnkeep_services().items()]
    cmd = [json.loads(args) for word, args in _dockerfile() if word == "CMD"]
    found += [("Dockerfile CMD", cmd[-1])]
    for unit in sorted((DEPLOY / "systemd").glob("*.service")):
        for line in unit.read_text().splitlines():
            if line.startswith("ExecStart="):
                argv = shlex.split(line.removeprefix("ExecStart="))
                if Path(argv[0]).name == "turnkeep":
                    found.append((unit.name, ["turnkeep", *argv[1:]]))
    return found


# --- schemas -------------------------------------------------------------------------


def _strict(schema: Any) -> Any:
    """The schema with ``additionalProperties: false`` on every object that lists its
    properties and says nothing of others: a field the CRD does not know fails, as
    ``kubectl apply --validate=strict`` makes it fail."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if "properties" in out and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


def _keda_validator() -> jsonschema.protocols.Validator:
    from cloudcoil.models.keda.v1alpha1 import ScaledObject

    schema = _strict(ScaledObject.model_json_schema(by_alias=True))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _compose_validator() -> jsonschema.protocols.Validator:
    dist = importlib.metadata.distribution("check-jsonschema")
    path = Path(str(dist.locate_file("check_jsonschema/builtin_schemas/vendor/compose-spec.json")))
    schema = json.loads(path.read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _validate_k8s(doc: dict[str, Any], version: str) -> None:
    if doc["apiVersion"] == KEDA_API:
        _keda_validator().validate(doc)
    else:
        kubernetes_validate.validate(doc, version, strict=True)


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_the_kubernetes_manifests_validate_against_the_kubernetes_schemas(version):
    manifests = _manifests()
    assert {doc["kind"] for _, doc in manifests} >= {
        "ConfigMap",
        "Deployment",
        "Service",
        "Job",
        "PodDisruptionBudget",
        "ScaledObject",
        "HorizontalPodAutoscaler",
        "ServiceAccount",
    }
    for path, doc in manifests:
        try:
            _validate_k8s(doc, version)
        except (jsonschema.ValidationError, kubernetes_validate.ValidationError) as exc:
            where = ".".join(str(p) for p in exc.path)
            name = f"{doc['kind']}/{doc['metadata']['name']}"
            pytest.fail(f"{path.relative_to(ROOT)} {name}: {where}: {exc.message}")


@pytest.mark.parametrize(
    ("kind", "path", "field"),
    [
        ("Deployment", ["spec", "template", "spec", "containers", 0], "readinesProbe"),
        ("PodDisruptionBudget", ["spec"], "minAvailible"),
        ("ScaledObject", ["spec"], "minReplicas"),
        ("ScaledObject", ["spec", "triggers", 0], "meta"),
    ],
)
def test_the_validators_refuse_a_misspelt_field(kind, path, field):
    """The negative control: the validators above do see a field nobody knows."""
    doc = copy.deepcopy(next(d for _, d in _manifests() if d["kind"] == kind))
    node: Any = doc
    for key in path:
        node = node[key]
    node[field] = 1
    with pytest.raises(jsonschema.ValidationError):
        _validate_k8s(doc, K8S_VERSIONS[0])


def test_the_compose_file_validates_against_the_compose_specification():
    validator = _compose_validator()
    compose = _compose()
    errors = sorted(validator.iter_errors(compose), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)
    # the negative control
    bad = copy.deepcopy(compose)
    bad["services"]["worker"]["stop_grace_periode"] = "30s"
    assert not validator.is_valid(bad)


def test_the_kustomization_applies_every_manifest_but_the_alternatives():
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    top = {p.name for p in _manifest_files() if p.parent == K8S}
    assert listed == top
    assert "namespace" not in kustomization
    # KEDA's ScaledObject and the HPA alternative never scale the workers together
    applied = {d["kind"] for d in _applied()}
    assert "ScaledObject" in applied and "HorizontalPodAutoscaler" not in applied
    # one image, tagged with the project's version everywhere
    (image,) = kustomization["images"]
    assert image["newTag"] == _pyproject()["project"]["version"]
    used = {c["image"] for _, c in _containers()}
    assert used == {f"{image['name']}:{image['newTag']}"}


def test_no_manifest_names_a_namespace_or_holds_a_secret():
    for path, doc in _manifests():
        assert "namespace" not in doc["metadata"], path
        assert doc["kind"] != "Secret", f"{path}: the operator creates the Secret"


# --- against the code ----------------------------------------------------------------


def test_every_command_is_a_turnkeep_subcommand():
    subcommands, processes = _subcommands(), _process_subcommands()
    assert processes <= subcommands
    commands = _turnkeep_commands()
    # five roles in Kubernetes and in compose, the image's CMD, two systemd units
    assert len(commands) >= 5 + 5 + 1 + 2
    for where, argv in commands:
        assert argv[0] == "turnkeep", f"{where}: {argv} does not run turnkeep"
        assert argv[1] in subcommands, f"{where}: turnkeep has no subcommand {argv[1]!r}"
        assert argv[1] in processes, f"{where}: turnkeep {argv[1]} runs no service process"
    # every container of the turnkeep image runs a turnkeep subcommand, nothing bare
    assert {where for where, _ in commands} >= {w for w, _ in _containers()}
    roles = {argv[1] for where, argv in commands if where.startswith(("Deployment", "Job"))}
    assert roles == {"api", "worker", "beat", "flower", "migrate"}


def test_the_probe_paths_are_public_routes_of_the_api():
    from starlette.routing import Match

    from turnkeep.api.app import _public, app

    def served(path: str) -> bool:
        scope = {"type": "http", "method": "GET", "path": path, "root_path": "", "headers": []}
        return any(route.matches(scope)[0] == Match.FULL for route in app.router.routes)

    api = _by_kind("Deployment")["turnkeep-api"]["spec"]["template"]["spec"]["containers"][0]
    paths = {
        api[probe]["httpGet"]["path"]
        for probe in ("readinessProbe", "livenessProbe", "startupProbe")
    }
    compose_check = " ".join(_compose()["services"]["api"]["healthcheck"]["test"])
    paths |= set(re.findall(r"http://127\.0\.0\.1:8000(/[a-z]+)", compose_check))
    assert paths == {"/readyz", "/healthz"}
    for path in paths:
        assert served(path), f"the API has no GET {path}"
        # kubelet and Docker send no token
        assert path in _public(app), f"{path} needs a token"


def test_probes_and_services_name_ports_their_containers_have():
    deployments = _by_kind("Deployment")
    for where, container in _containers():
        ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
        for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
            if probe in container:
                port = container[probe]["httpGet"]["port"]
                assert port in ports, f"{where} {probe}: no port {port!r}"
    for name, service in _by_kind("Service").items():
        (deployment,) = [
            d for d in deployments.values() if _selects(service["spec"]["selector"], d)
        ]
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        names = {p["name"] for p in container["ports"]}
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in names, f"Service/{name}: no port {port['targetPort']}"
        assert service["spec"]["type"] == "ClusterIP"


def test_selectors_select_their_own_pods():
    deployments = _by_kind("Deployment")
    for name, deployment in deployments.items():
        selector = deployment["spec"]["selector"]["matchLabels"]
        assert [n for n, d in deployments.items() if _selects(selector, d)] == [name]
    covered = set()
    for pdb in _by_kind("PodDisruptionBudget").values():
        selector = pdb["spec"]["selector"]["matchLabels"]
        (target,) = [n for n, d in deployments.items() if _selects(selector, d)]
        covered.add(target)
    scaled = _by_kind("ScaledObject")["turnkeep-worker"]["spec"]["scaleTargetRef"]["name"]
    hpa = _by_kind("HorizontalPodAutoscaler", [d for _, d in _manifests()])["turnkeep-worker"]
    assert scaled == hpa["spec"]["scaleTargetRef"]["name"] == "turnkeep-worker"
    # an autoscaled Deployment names no replica count: re-applying it would reset it
    assert "replicas" not in deployments["turnkeep-worker"]["spec"]


def test_every_environment_variable_is_a_turnkeep_setting():
    known = _known_env()
    used: dict[str, str] = {}
    for where, container in _containers():
        for env in container.get("env", []):
            used[env["name"]] = where
            ref = env.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                used[ref["key"]] = f"{where} (Secret key)"
    for key in _by_kind("ConfigMap")[CONFIGMAP]["data"]:
        used[key] = f"ConfigMap/{CONFIGMAP}"
    for name, service in _compose_turnkeep_services().items():
        for key in service.get("environment", {}):
            used[key] = f"compose {name}"
    unknown = {name: where for name, where in used.items() if name not in known}
    assert not unknown, f"not turnkeep settings: {unknown}"


def test_the_secret_keys_are_the_documented_ones_and_each_pod_reads_only_its_own():
    documented = _documented_secret_keys()
    assert {"TURNKEEP_TOKENS", "TURNKEEP_DATABASE_URL", "TURNKEEP_MIGRATE_URL"} <= documented
    assert "TURNKEEP_FLOWER_BASIC_AUTH" in documented
    referenced: dict[str, set[str]] = {}
    for where, container in _containers():
        assert "envFrom" not in container or all(
            "secretRef" not in e for e in container["envFrom"]
        ), f"{where}: a whole Secret in the environment"
        for env in container.get("env", []):
            ref = env.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                assert ref["name"] == SECRET and env["name"] == ref["key"], where
                referenced.setdefault(ref["key"], set()).add(where.split("/")[1])
    assert set(referenced) == documented
    # the owner's URL in the migrate Job only, Flower's credentials in Flower only
    assert referenced["TURNKEEP_MIGRATE_URL"] == {"turnkeep-migrate"}
    assert referenced["TURNKEEP_FLOWER_BASIC_AUTH"] == {"turnkeep-flower"}
    # and nothing secret in the ConfigMap
    assert not set(_by_kind("ConfigMap")[CONFIGMAP]["data"]) & documented


def test_pods_run_as_the_images_unprivileged_user():
    user = [args for word, args in _dockerfile() if word == "USER"][-1]
    assert user.split(":")[0] == str(UID)
    for where, spec in _pods():
        ctx = spec["securityContext"]
        assert ctx["runAsNonRoot"] is True and ctx["runAsUser"] == UID, where
        assert ctx["seccompProfile"]["type"] == "RuntimeDefault", where
        assert spec["automountServiceAccountToken"] is False, where
        # Service links would put TURNKEEP_API_PORT=tcp://… in the settings' prefix
        assert spec["enableServiceLinks"] is False, where
    for where, container in _containers():
        ctx = container["securityContext"]
        assert ctx["readOnlyRootFilesystem"] is True, where
        assert ctx["allowPrivilegeEscalation"] is False, where
        assert ctx["capabilities"]["drop"] == ["ALL"], where
        assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]
        assert any(m["mountPath"] == "/tmp" for m in container["volumeMounts"]), where


def test_there_is_one_beat():
    (beat,) = [
        d
        for d in _by_kind("Deployment").values()
        if _command(d["spec"]["template"]["spec"]["containers"][0])[:2] == ["turnkeep", "beat"]
    ]
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"]["type"] == "Recreate"
    name = beat["metadata"]["name"]
    for _, doc in _manifests():
        assert doc.get("spec", {}).get("scaleTargetRef", {}).get("name") != name
    (compose_beat,) = [
        s for s in _compose_turnkeep_services().values() if s["command"][:2] == ["turnkeep", "beat"]
    ]
    assert compose_beat.get("deploy", {}).get("replicas", 1) == 1
    # its schedule file is on the writable emptyDir
    command = _command(beat["spec"]["template"]["spec"]["containers"][0])
    assert command[command.index("-s") + 1].startswith("/tmp/")


def test_the_worker_exposes_its_metrics_port_and_stops_within_its_grace():
    from turnkeep.worker.app import app, settings

    spec = _by_kind("Deployment")["turnkeep-worker"]["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["metrics"] == int(env["TURNKEEP_METRICS_PORT"])
    # kubelet probes the pod's address, not its loopback
    assert env["TURNKEEP_METRICS_ADDRESS"] == "0.0.0.0"
    assert container["livenessProbe"]["httpGet"]["port"] == "metrics"
    # the soft-shutdown window and time to commit the step in hand, as compose allows
    grace = spec["terminationGracePeriodSeconds"]
    assert grace >= app.conf.worker_soft_shutdown_timeout + 15
    # the worker's own deadline (worker/shutdown.py) comes first: it logs why it exits
    assert grace > settings.worker.shutdown_grace >= app.conf.worker_soft_shutdown_timeout + 15
    worker = _compose_turnkeep_services()["worker"]
    assert worker["stop_grace_period"] == f"{grace}s"


def test_the_keda_trigger_reads_the_queue_and_redis_the_workers_use():
    from turnkeep.runtime.settings import BrokerSettings

    config = _by_kind("ConfigMap")[CONFIGMAP]["data"]
    url = urlsplit(config["TURNKEEP_REDIS_URL"])
    queue = config.get("TURNKEEP_QUEUE", BrokerSettings.model_fields["queue"].default)
    (trigger,) = _by_kind("ScaledObject")["turnkeep-worker"]["spec"]["triggers"]
    assert trigger["type"] == "redis"
    meta = trigger["metadata"]
    assert meta["listName"] == queue
    assert meta["address"] == f"{url.hostname}:{url.port or 6379}"
    assert meta["databaseIndex"] == (url.path.lstrip("/") or "0")
    # dialled from KEDA's namespace: a short Service name would find another Redis
    assert ".svc" in meta["address"] or "." in meta["address"].split(":")[0]
    assert int(meta["listLength"]) > 0


def test_flower_is_behind_auth_and_inside_the_cluster():
    spec = _by_kind("Deployment")["turnkeep-flower"]["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert _command(container)[:2] == ["turnkeep", "flower"]
    env = {e["name"]: e for e in container["env"]}
    ref = env["TURNKEEP_FLOWER_BASIC_AUTH"]["valueFrom"]["secretKeyRef"]
    assert ref["name"] == SECRET and not ref.get("optional", False)
    assert "TURNKEEP_FLOWER_UNSAFE_NOAUTH" not in env
    assert env["TURNKEEP_FLOWER_ADDRESS"]["value"] == "0.0.0.0"
    assert _by_kind("Service")["turnkeep-flower"]["spec"]["type"] == "ClusterIP"
    assert not any(d["kind"] == "Ingress" for _, d in _manifests())


# --- the lock and the image ----------------------------------------------------------


def _extra_requirements(name: str, extras: set[str]) -> set[str]:
    """What ``name[extras]`` adds, by the installed distribution's metadata."""
    out = set()
    for spec in importlib.metadata.requires(name) or []:
        req = Requirement(spec)
        if req.marker is None:
            continue
        for extra in extras:
            if req.marker.evaluate({**IMAGE_ENV, "extra": extra}) and not req.marker.evaluate(
                {**IMAGE_ENV, "extra": ""}
            ):
                out.add(canonicalize_name(req.name))
    return out


def test_the_server_distribution_is_the_clients_other_half():
    """deploy/server/ builds turnkeep-server: the service's folders, linked, at the
    client's version, requiring the client with the server extra; the client's
    distribution finds none of them."""
    client = _pyproject()
    server = tomllib.loads((DEPLOY / "server" / "pyproject.toml").read_text())
    assert server["project"]["version"] == client["project"]["version"]
    assert server["project"]["dependencies"] == [
        f"turnkeep[server]=={client['project']['version']}"
    ]
    links = {p.name: p.resolve() for p in (DEPLOY / "server" / "turnkeep").iterdir()}
    assert links == {d: ROOT / d for d in ("api", "worker", "store", "recovery")}
    found = server["tool"]["setuptools"]["packages"]["find"]["include"]
    assert found == [f"turnkeep.{d}*" for d in ("api", "worker", "store", "recovery")]
    server_packages = tuple(f.rstrip("*") for f in found)
    assert not any(p.rstrip("*").startswith(server_packages) for p in _packages_of_the_client())


def _packages_of_the_client() -> list[str]:
    return _pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]


def test_the_lock_pins_every_dependency_within_its_range():
    """The image is the server: the client's dependencies and the server extra's."""
    lock = _lock()
    project = _pyproject()["project"]
    server = project["optional-dependencies"]["server"]
    assert any(Requirement(s).name == "celery" for s in server)
    for spec in [*project["dependencies"], *server]:
        req = Requirement(spec)
        if req.marker is not None and not req.marker.evaluate(IMAGE_ENV):
            continue
        name = canonicalize_name(req.name)
        assert name in lock, f"requirements.lock misses {req.name}: regenerate it (make lock)"
        version, _ = lock[name]
        assert req.specifier.contains(version, prereleases=True), (
            f"requirements.lock pins {name}=={version}, outside {req.specifier}: regenerate it"
        )
        for extra in _extra_requirements(req.name, set(req.extras)):
            assert extra in lock, f"requirements.lock misses {extra}, of {spec}"
    for name, (_, hashes) in lock.items():
        assert hashes, f"requirements.lock: {name} has no hash"
    assert "turnkeep" not in lock


def test_the_lock_installs_no_development_tool():
    lock = _lock()
    for spec in _pyproject()["project"]["optional-dependencies"]["dev"]:
        name = canonicalize_name(Requirement(spec).name)
        assert name not in lock, f"requirements.lock installs the dev tool {name}"


def test_the_dockerfile_installs_the_lock_and_copies_every_package():
    instructions = _dockerfile()
    copied: list[str] = []
    installs: list[str] = []
    for word, args in instructions:
        if word == "COPY" and not args.startswith("--from"):
            copied += args.split()[:-1]
        if word == "RUN" and "pip install" in args:
            # each `pip install …` of a RUN, up to the next && or ;
            installs += [c.strip() for c in re.split(r"&&|;", args) if "pip install" in c]
    assert "requirements.lock" in copied
    lock_installs = [i for i in installs if "-r requirements.lock" in i]
    assert lock_installs
    assert all("--no-deps" in i and "--require-hashes" in i for i in lock_installs)
    # nothing else is resolved: every install takes no dependencies
    assert all("--no-deps" in i for i in installs), installs
    assert any({".", "./deploy/server"} <= set(i.split()) for i in installs)
    assert "deploy/server" in copied
    # the lock is installed before the project
    project = next(n for n, i in enumerate(installs) if "." in i.split())
    assert installs.index(lock_installs[0]) < project
    packages = _packages()
    assert packages <= set(copied), f"not copied: {packages - set(copied)}"
    # the build context lets every COPY source through (deploy/Dockerfile.dockerignore)
    ignore = [
        line
        for line in (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert ignore[0] == "*"
    for source in copied:
        assert f"!{source}" in ignore, f"Dockerfile.dockerignore keeps out {source}"
    cmd = json.loads([args for word, args in instructions if word == "CMD"][-1])
    assert cmd[0] == "turnkeep" and cmd[1] in _subcommands() & _process_subcommands()


def test_the_lock_was_resolved_for_the_image():
    """Python 3.11 on Linux: the image's base, and within requires-python."""
    from packaging.specifiers import SpecifierSet

    for line in LOCK.read_text().splitlines():
        if ";" in line and not line.lstrip().startswith("#"):
            marker = Marker(line.split(";", 1)[1].split("\\")[0].strip())
            assert marker.evaluate(IMAGE_ENV), line
    bases = {args.split()[0] for word, args in _dockerfile() if word == "FROM"}
    assert bases == {f"python:{IMAGE_ENV['python_version']}-slim"}
    assert SpecifierSet(_pyproject()["project"]["requires-python"]).contains(
        IMAGE_ENV["python_full_version"]
    )
