"""Schemathesis hooks of the contract test (test/contract/schemathesis.test.ts), loaded through SCHEMATHESIS_HOOKS.

The fuzzer must never make the suite run generated text or reach a generated host. Before every call the request
body is rewritten: scripts (setup/dev scripts, scheduler script tasks) become `true`, agent profiles become the
harmless `contract` profile of the test's config (on the multi-agent service, `agent` and the agent routes' `{name}`
name one of its served agents, whose profile is `contract`: ARMADA_CONTRACT_AGENT), and outbound URLs (webhooks, flow sources, code-host hooks,
remote repositories) point at the fakes on loopback. Replacements keep a string's length where they can, so a
value generated too long stays too long and negative cases stay negative; schemathesis revalidates a case after
this hook, so a case the rewrite made valid is judged as valid.
"""

import os
import re
import sys
import uuid

import schemathesis


WEBHOOK_URL = os.environ.get("ARMADA_CONTRACT_WEBHOOK_URL", "http://127.0.0.1:9/hook")
PLATFORM_URL = os.environ.get("ARMADA_CONTRACT_PLATFORM_URL", "http://127.0.0.1:9")
REPO = os.environ.get("ARMADA_CONTRACT_REPO", "/nonexistent")
AGENT = os.environ.get("ARMADA_CONTRACT_AGENT", "contract")
SOURCE = os.environ.get("ARMADA_CONTRACT_SOURCE", "contract")
SOURCE_ID = os.environ.get("ARMADA_CONTRACT_SOURCE_ID", "")

SCRIPT_KEYS = {"script", "setup_script", "dev_script", "setupScript", "devScript", "command", "cmd"}
AGENT_KEYS = {"llm", "defaultLLM", "agent", "executor", "assignee"}
URL_KEYS = {"url", "webhookUrl", "callbackUrl", "callback_url", "webhook_url"}
HTTP = re.compile(r"^https?://", re.IGNORECASE)
# the multi-agent service's routes of one agent (GET /agents/{name}/status, POST /agents/{name}/restart)
AGENT_ROUTE = "/api/v1/agents/{name}/"
AGENT_NAME = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
SOURCE_TYPES = ("flow-builder", "langflow", "automagik-hive", "automagik-agents")


def _script(v):
    # Length kept (a comment pads it), so a script generated too long stays too long.
    if isinstance(v, str):
        if v == "":
            return v
        return "true" if len(v) <= 6 else "true #" + "x" * (len(v) - 6)
    if isinstance(v, list):
        return ["true" if isinstance(x, str) else x for x in v]
    return v


def _agent(v):
    # Only strings that could name a profile (1..100 chars); others stay as generated (the API must reject them).
    if isinstance(v, str) and 1 <= len(v) <= 100:
        return AGENT
    return v


def _repo(v):
    # Any non-empty string: a local path or URL the API accepts must lead to a real repository, never a remote.
    if isinstance(v, str) and v != "":
        return REPO
    return v


def _platform_url(source_type):
    """A URL of its own on the fake platform (source URLs are unique), routed there by the source type."""
    return f"{PLATFORM_URL}/{source_type}/{uuid.uuid4().hex[:12]}"


def _source_body(body):
    """Sources: every URL points at the fake platform; a body naming a type or a URL carries both (the service
    validates a new URL or type against the platform)."""
    if not isinstance(body, dict):
        return body
    out = dict(body)
    source_type = out.get("source_type")
    url = out.get("url")
    if isinstance(url, str) and HTTP.match(url) or (source_type in SOURCE_TYPES and "url" not in out):
        if source_type not in SOURCE_TYPES:
            if "source_type" in out:
                return out  # an invalid type: the API must reject it whatever the URL
            source_type = "flow-builder"
            out["source_type"] = source_type
        out["url"] = _platform_url(source_type)
    return out


def _schedule(v):
    # A cron expression and an IANA zone are more than a JSON schema can say: any non-empty string the schema
    # allows becomes a valid one (once a year, so no scheduled run starts during the test).
    return "0 3 1 1 *" if isinstance(v, str) and 1 <= len(v) <= 200 else v


AT = re.compile(r"^(now|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})?)$")


def _at(v):
    # A one-time schedule's time must be a real calendar date in the future, more than the pattern can say: any value
    # the pattern allows becomes one (far ahead, so no run starts during the test; `now` stays now, a harmless `true`).
    return "2099-01-01T03:00:00" if isinstance(v, str) and v != "now" and AT.match(v) else v


def _timezone(v):
    return "UTC" if isinstance(v, str) and 1 <= len(v) <= 64 else v


def _flow_task(task):
    # A flow task's source and flow are resolved at creation (the source by id or name, the flow against the
    # platform's list): strings that could name them (the schema's lengths) name the contract source (created by the
    # test on the fake platform) and "Flow one", which every type of the fake platform lists (fakePlatforms.ts).
    if not isinstance(task, dict):
        return task
    out = dict(task)
    if isinstance(out.get("source"), str) and 1 <= len(out["source"]) <= 200:
        out["source"] = SOURCE
    if isinstance(out.get("flow"), str) and 1 <= len(out["flow"]) <= 500:
        out["flow"] = "Flow one"
    return out


def _rewrite(node, in_repository=False, keep_urls=False):
    if isinstance(node, list):
        return [_rewrite(x, in_repository, keep_urls) for x in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k in SCRIPT_KEYS:
            out[k] = _script(v)
        elif k in AGENT_KEYS:
            out[k] = _agent(v)
        elif k == "git_repo_path" or (in_repository and k == "url"):
            out[k] = _repo(v)
        elif k in URL_KEYS and not keep_urls:
            out[k] = WEBHOOK_URL if isinstance(v, str) and HTTP.match(v) else v
        elif k == "schedule":
            out[k] = _schedule(v)
        elif k == "timezone":
            out[k] = _timezone(v)
        elif k == "at":
            out[k] = _at(v)
        elif k == "repository":
            out[k] = _rewrite(v, True, keep_urls)
        else:
            out[k] = _rewrite(v, in_repository, keep_urls)
    return out


@schemathesis.hook
def before_call(context, case, kwargs):
    body = case.body
    sources = case.operation.path.startswith("/api/v1/sources")
    if sources:
        body = _source_body(body)
    if case.operation.path == "/api/v1/workflows" and isinstance(body, dict) and isinstance(body.get("tasks"), list):
        body = {**body, "tasks": [_flow_task(t) for t in body["tasks"]]}
    if isinstance(body, (dict, list)):
        case.body = _rewrite(body, keep_urls=sources)
    # the flow tasks' source stays: changes and deletes of it go to an id that names no source (404)
    if sources and case.method.upper() in ("PATCH", "DELETE") and isinstance(case.path_parameters, dict):
        if SOURCE_ID and case.path_parameters.get("id") == SOURCE_ID:
            case.path_parameters["id"] = str(uuid.uuid4())
    if isinstance(case.query, dict):
        for k in list(case.query):
            if k in AGENT_KEYS:
                case.query[k] = _agent(case.query[k])
    # an agent's routes: a name the pattern allows (up to 100 characters) names the served agent, so they reach their
    # 200 (a restart of an agent whose tasks run `true`); longer ones and those the pattern refuses stay as generated
    # (the 404 of an unknown agent, the 400)
    if case.operation.path.startswith(AGENT_ROUTE) and isinstance(case.path_parameters, dict):
        name = case.path_parameters.get("name")
        if isinstance(name, str) and AGENT_NAME.match(name) and name not in (".", ".."):
            case.path_parameters["name"] = AGENT
