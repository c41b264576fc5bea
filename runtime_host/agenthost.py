"""Agents, providers and routes: the model providers a person added (keys in their vault), their agents
(profiles, toolkits, allowlists, safety), the model chosen for each kind of work (roles), the routes a worker
is bound with (primary and fallbacks, keys included), and each agent's worker (start, stop, restart, delete).
"""

from __future__ import annotations

import json
import logging
import socket
import time
from typing import Any

from runtime_host import memory_jobs
from runtime_host.paths import agent_dir
from runtime_host.profiles import shipped_profiles
from runtime_host.states import WorkerState
from runtime_host.store import UNNAMED, UNNAMED_AS, AgentInstance, AgentProfile, StoreError, called
from runtime_host.supervisor import WorkerHandle
from runtime_host.turns import TurnFailed
from vault import VaultUnavailable

log = logging.getLogger("hearth.pod")


# The embedded offline model is always there: Hearth answers with no key and no network.
EMBEDDED = {"name": "embedded", "kind": "embedded", "base_url": "", "model": "smollm2-135m-instruct",
            "has_key": False, "builtin": True}
EMBEDDED_NOTE = ("the tiny offline model (SmolLM2-135M): it works with no key and no network but gives weak "
                 "answers and cannot use tools. Add a provider in Settings → Providers for real answers.")
# Kinds of work, each with its own model. Background roles default to cheap, local models.
ROLES: dict[str, str] = {
    # Only roles that something in Hearth uses. Speech to text runs on a fixed local model (runtime_host.speech).
    "chat": "each agent's own model (set per agent)",
    "extraction": "embedded",          # memory producer: keep or skip
    "ingest": "extraction",            # memory ingest (writing wiki pages) may pin its own; else the extraction model
    "ask_memory": "ingest",            # "Ask memory" answers; else the ingest model
    "import": "extraction",            # watched folders: keep or skip messages of mail exports; else extraction's
    "embedding": "local/static",       # memory search by meaning: local/static, local/minilm, or PROVIDER/MODEL
}
# Local models for the embedding role (ref "local/<name>") and the wiki_engine embedder each one loads.
EMBEDDING_MODELS: dict[str, str] = {"static": "static", "minilm": "minilm", "all-MiniLM-L6-v2": "minilm"}


def local_embedder(role: str, provider: str | None, model: str | None) -> bool:
    """Whether a role's choice is one of the local embedding models: "local/static" or "local/minilm" for the
    embedding role, and nothing else. Any other "local/..." is the person's own provider named "local" (the
    README's Ollama example), for the embedding role as for every other."""
    return role == "embedding" and provider == "local" and (model or "") in EMBEDDING_MODELS


class UnknownAgent(StoreError):
    pass


class AgentHost:
    """Agents, providers and routes. `pod` is the Pod (kept loose: this module never imports it)."""

    def __init__(self, pod: Any):
        self.pod = pod
        self._epoch = 0  # bumped when a profile or provider changes: idle workers rebind
        pod.subscribe(self._persist_worker_state)

    def register_tools(self, tools: dict[str, Any]) -> None:
        """The Pod tools this part carries out for a worker: an agent's own notes (runtime_host/agentnotes.py)."""
        tools["append_note"] = self._tool_append_note

    async def _tool_append_note(self, person_id: str, instance_id: str, args: dict[str, Any]) -> str:
        from runtime_host import agentnotes

        return await agentnotes.append_note(self.pod, person_id, instance_id, args)

    def know_keys(self, person_id: str) -> None:
        """Has the key redactor know the person's provider keys before anything they type is kept: a key pasted
        into a chat is hidden in the stored message and in its title. Read at each turn (one keyring read per
        provider with a key): a key added or replaced meanwhile by another Hearth process (the command line while
        the window runs) is known too."""
        try:
            vault = self.pod.vault_for(person_id)
            for p in self.pod.store.list_providers(person_id):
                if p.has_key:
                    vault.get(f"provider/{p.name}")  # Vault.get hands the value to the redactor
        except VaultUnavailable as exc:  # the turn itself says so when it needs the key
            log.info("provider keys not read before a message was kept: %s", exc)

    def allow_mcp(self, person_id: str, agent: str, server: str, tools: list[str] | None = None) -> list[str]:
        """A person allows an MCP server's tools (all it lists now, or the named ones) for one agent."""
        inst, profile = self.find_agent(person_id, agent)
        listed = self.pod.mcp.catalog(inst.person_id).get(f"mcp:{server}")
        if listed is None:
            raise StoreError(f"No MCP server named {server!r}. Add it first with `mcp add`.")
        chosen = listed if tools is None else [t for t in tools if t in listed]
        allowlist = self.allowlist(inst, profile).allow(f"mcp:{server}", chosen)
        self.pod.store.update_profile(profile.id, allowlist=allowlist.to_json())
        self._epoch += 1
        return sorted(chosen)

    def add_provider(self, person_id: str, name: str, *, kind: str, base_url: str, model: str = "", key: str | None = None) -> dict[str, Any]:
        name = name.strip()
        if not name:
            raise StoreError("A provider needs a name.")
        from runtime_host.providers import KINDS

        if kind not in KINDS or kind == "embedded":
            raise StoreError(f"Unknown provider kind {kind!r}. Known kinds: "
                             f"{', '.join(k for k in KINDS if k != 'embedded')}.")
        if name == EMBEDDED["name"]:
            raise StoreError("'embedded' is Hearth's built-in offline model; give your provider another name.")
        if not base_url.startswith(("http://", "https://")):
            raise StoreError(f"The base URL must start with http:// or https:// (got {base_url!r}).")
        if key:
            self.pod.vault_for(person_id).set(f"provider/{name}", key)
        row = self.pod.store.add_provider(person_id, name, kind, base_url.rstrip("/"), model, has_key=bool(key))
        self._epoch += 1
        if (self.pod.memory_host.is_open and person_id == memory_jobs.owner(self.pod)
                and self.embedding_model().partition("/")[0] == name):
            self.pod.memory_host.embedding_changed()  # memory's embeddings use this provider: its new key or address
        return {"name": row.name, "kind": row.kind, "base_url": row.base_url, "model": row.model, "has_key": row.has_key}

    def list_providers(self, person_id: str, *, builtin: bool = True) -> list[dict[str, Any]]:
        from runtime_host.providers import supports_tools

        rows = [{"name": p.name, "kind": p.kind, "base_url": p.base_url, "model": p.model, "has_key": p.has_key,
                 "builtin": False, "supports_tools": supports_tools(p.kind)} for p in self.pod.store.list_providers(person_id)]
        if builtin:
            rows.append({**EMBEDDED, "supports_tools": False})
        return rows

    def check_provider(self, person_id: str, name: str, *, kind: str | None = None, base_url: str | None = None,
                       key: str | None = None) -> Any:
        """Lists the server's models and tests the key (the saved one when none is given) without saving
        anything; raises ProviderError saying what failed (nothing answers, key refused, wrong address)."""
        from runtime_host.providers.check import check_provider

        saved = self._provider(person_id, name) if name else None
        kind = kind or (saved["kind"] if saved else "openai-compatible")
        base_url = (base_url or (saved["base_url"] if saved else "")).strip()
        if key is None and saved and saved["has_key"] and saved["base_url"].rstrip("/") == base_url.rstrip("/"):
            key = self.pod.vault_for(person_id).get(f"provider/{name}")
        return check_provider(name or "provider", kind, base_url, key)

    def remove_provider(self, person_id: str, name: str) -> None:
        """Removes a provider and its key; refuses while an agent or a role still uses it."""
        if name == EMBEDDED["name"]:
            raise StoreError("The built-in offline model cannot be removed.")
        if self.pod.store.get_provider(person_id, name) is None:
            raise StoreError(f"No provider named {name!r}.")
        users = []
        for inst, profile in self.pod.store.list_agents(person_id):  # the person's own: providers are per person
            refs = [profile.provider or ""] + json.loads(profile.fallbacks or "[]")
            if any(r.split("/", 1)[0] == name for r in refs):
                users.append(inst.name)
        users += [f"the {role} role" for role, row in self.pod.store.role_models(person_id).items()
                  if row.provider == name and not local_embedder(role, row.provider, row.model)]
        if users:
            raise StoreError(f"{name!r} is still used by {', '.join(sorted(set(users)))}: give them another "
                             "provider first, then remove it.")
        try:
            self.pod.vault_for(person_id).delete(f"provider/{name}")
        except Exception as exc:  # a key that is already gone is fine
            log.info("no key removed for provider %s: %s", name, exc)
        self.pod.store.delete_provider(person_id, name)
        self._epoch += 1

    def _provider(self, person_id: str, name: str) -> dict[str, Any] | None:
        if name == EMBEDDED["name"]:
            return dict(EMBEDDED)
        p = self.pod.store.get_provider(person_id, name)
        return None if p is None else {"name": p.name, "kind": p.kind, "base_url": p.base_url, "model": p.model,
                                       "has_key": p.has_key, "builtin": False}

    def profiles(self) -> dict[str, dict[str, Any]]:
        """The agent profiles Hearth ships, by template name."""
        return shipped_profiles()

    def add_agent(self, person_id: str, name: str, *, provider: str | None = None, model: str | None = None, system: str | None = None,
                  toolkits: list[str] | None = None, profile: str | None = None) -> dict[str, Any]:
        name = name.strip()
        if not name:
            raise StoreError("An agent needs a name.")
        role = ""
        if profile:
            templates = self.profiles()
            if profile not in templates:
                raise StoreError(f"No profile named {profile!r}. Profiles: {', '.join(sorted(templates))}.")
            t = templates[profile]
            system = t["system"] if system is None else system
            toolkits = t["toolkits"] if toolkits is None else toolkits
            role = t.get("role", "")
        if provider is None:
            providers = self.pod.store.list_providers(person_id)
            provider = providers[0].name if len(providers) == 1 else EMBEDDED["name"] if not providers else None
        if provider is not None and self._provider(person_id, provider) is None:
            known = ", ".join(p.name for p in self.pod.store.list_providers(person_id)) or "none yet"
            raise StoreError(f"No provider named {provider!r} (known: {known}). Add it first with `provider add`.")
        inst = self.pod.store.add_agent(person_id, name, provider=provider, model=model, system=system or "",
                                    toolkits=toolkits, role=role, template=profile)
        return self._agent_info(inst, self.pod.store.get_instance(inst.id)[1])  # type: ignore[index]

    def edit_agent(self, person_id: str, name: str, **changes: Any) -> dict[str, Any]:
        """Changes an agent's provider, model, instructions or toolkits; its idle worker rebinds."""
        inst, profile = self.find_agent(person_id, name)
        fields: dict[str, Any] = {}
        if changes.get("safety") is not None:
            from runtime_host.safety.detectors import DETECTOR_NAMES
            from runtime_host.safety.policy import Policy, PolicyError

            try:  # a list of the detectors that run, given now, names all of this Hearth's that run
                policy = Policy.from_dict(name, changes["safety"], listed_among=DETECTOR_NAMES)
            except PolicyError as exc:
                raise StoreError(str(exc)) from None
            fields["safety"] = json.dumps(policy.saved(changes["safety"]))
        if changes.get("fallbacks") is not None:
            for ref in changes["fallbacks"]:
                if self._provider(person_id, ref.split("/", 1)[0]) is None:
                    raise StoreError(f"No provider named {ref.split('/', 1)[0]!r} for the fallback chain.")
            fields["fallbacks"] = list(changes["fallbacks"])
        if changes.get("provider") is not None:
            if self._provider(person_id, changes["provider"]) is None:
                raise StoreError(f"No provider named {changes['provider']!r}. Add it first with `provider add`.")
            fields["provider"] = changes["provider"]
        if changes.get("model") is not None:
            fields["model"] = changes["model"] or None
        if changes.get("system") is not None:
            fields["system_prompt"] = changes["system"]
        if changes.get("toolkits") is not None:
            fields["toolkits"] = list(changes["toolkits"])
            fields["allowlist"] = None  # the person chose these toolkits: allow their actions as they are now
        if fields:
            profile = self.pod.store.update_profile(profile.id, **fields)
            self._epoch += 1
        return self._agent_info(inst, profile)

    def _agent_info(self, inst: AgentInstance, profile: AgentProfile,
                    statuses: dict[str, Any] | None = None) -> dict[str, Any]:
        h = self.pod.supervisor.handles.get((inst.person_id, inst.id))
        if h is not None and h.state != WorkerState.STOPPED:
            worker = h.info()
        else:
            worker = self._status_from_store(inst.id, statuses)
        return {"id": inst.id, "name": inst.name, "template": profile.template, "role": profile.role,
                "provider": profile.provider, "model": profile.model, "fallbacks": json.loads(profile.fallbacks or "[]"),
                "system": profile.system_prompt,
                "toolkits": json.loads(profile.toolkits), "worker": worker}

    def _status_from_store(self, instance_id: str, statuses: dict[str, Any] | None) -> dict[str, Any]:
        """A worker owned by another Hearth process on this machine (the app, a detached run)."""
        import psutil

        row = (statuses if statuses is not None else self.pod.store.worker_statuses()).get(instance_id)
        stopped = {"state": WorkerState.STOPPED.value, "pid": None, "rss_mb": None, "uptime_s": None,
                   "restarts": row.restarts if row else 0, "reason": row.reason if row else None}
        if row is None or row.state in ("stopped",) or not row.pid or row.host != socket.gethostname():
            return {**stopped, "state": row.state if row and row.state == "fatal" else "stopped"}
        try:
            proc = psutil.Process(row.pid)
            if proc.create_time() > (row.started_at or 0) + 5 or "runtime_host.worker" not in " ".join(proc.cmdline()):
                return stopped  # the pid was reused
            rss = proc.memory_info().rss + sum(c.memory_info().rss for c in proc.children(recursive=True))
        except psutil.Error:
            return stopped
        return {"state": row.state, "pid": row.pid, "rss_mb": round(rss / 1048576, 1),
                "uptime_s": round(time.time() - row.started_at, 1) if row.started_at else None,
                "restarts": row.restarts, "reason": row.reason, "owner": "another Hearth process"}

    def list_agents(self, person_id: str) -> list[dict[str, Any]]:
        self.pod.supervisor.refresh_rss()
        statuses = self.pod.store.worker_statuses()
        return [self._agent_info(i, p, statuses) for i, p in self.pod.store.list_agents(person_id)]

    def _persist_worker_state(self, ev: dict[str, Any]) -> None:
        if ev.get("type") != "worker.state":
            return
        h = self.pod.supervisor.handles.get(tuple(ev["key"]))  # type: ignore[arg-type]
        if h is None:
            return
        self.pod.store.save_worker_status(h.key[1], state=h.state.value, pid=h.pid, host=socket.gethostname(), rss=h.rss,
                                      started_at=h.started_at, restarts=h.restarts, reason=h.reason)

    def find_agent(self, person_id: str, name: str) -> tuple[AgentInstance, AgentProfile]:
        found = self.pod.store.get_agent(person_id, name)
        if found is None:
            names = [i.name for i, _ in self.pod.store.list_agents(person_id)]
            known = f"Agents: {', '.join(names)}." if names else "There are no agents yet."
            raise UnknownAgent(f"No agent named {name!r}. {known} Add one with `python -m runtime_host agent add {name}`.")
        return found

    def _route(self, person_id: str, ref: str, model: str | None = None) -> dict[str, Any]:
        """One route of `person_id`: their provider (by name, or "provider/model") with the key from their vault."""
        name, _, ref_model = ref.partition("/")
        prov = self._provider(person_id, name)
        if prov is None:
            raise TurnFailed(f"No provider named {name!r}. Add it in Settings → Providers.")
        key = None
        if prov["has_key"]:
            try:
                key = self.pod.vault_for(person_id).get(f"provider/{name}")
            except VaultUnavailable as exc:
                raise TurnFailed(str(exc)) from None
            if not key:
                raise TurnFailed(
                    f"The key for provider {name!r} is missing from the keyring. Add it again in Settings → "
                    f"Providers or with `python -m runtime_host provider add {name} --key-from-stdin`."
                )
        else:
            from runtime_host.providers.vendors import cloud_vendor

            v = cloud_vendor(name, prov["base_url"])
            if v is not None and v.needs_key:
                raise TurnFailed(v.missing_key_message())
        return {"provider": name, "kind": prov["kind"], "base_url": prov["base_url"],
                "model": ref_model or model or prov["model"], "key": key}

    def _routes(self, person_id: str, profile: AgentProfile) -> list[dict[str, Any]]:
        """The agent's fallback chain: its primary model, then each fallback in order.
        A fallback whose key is missing is left out (the primary's problem is reported)."""
        if not profile.provider:
            return []
        routes = [self._route(person_id, profile.provider, profile.model)]
        for ref in json.loads(profile.fallbacks or "[]"):
            try:
                routes.append(self._route(person_id, ref))
            except TurnFailed as exc:
                log.warning("fallback %s of agent %s left out: %s", ref, profile.name, exc)
        return routes

    def message_routes(self, inst: AgentInstance, profile: AgentProfile, model: str) -> list[dict[str, Any]]:
        """One message on another model: that route first, then the agent's own chain (keys included)."""
        chosen = self._route(inst.person_id, model)
        chain = [r for r in self._routes(inst.person_id, profile)
                 if (r["provider"], r["model"]) != (chosen["provider"], chosen["model"])]
        return [chosen, *chain]

    def _own_roles(self, person_id: str) -> dict[str, dict[str, Any]]:
        """The model the person chose for each role, or the role's default."""
        chosen = self.pod.store.role_models(person_id)
        roles: dict[str, dict[str, Any]] = {}
        for role, default in ROLES.items():
            row = chosen.get(role)
            if row is not None:
                roles[role] = {"provider": row.provider, "model": row.model, "source": "set"}
            elif default in ROLES:  # inherits another role
                roles[role] = {"inherits": default, "source": "default"}
            else:
                prov, _, model = default.partition("/")
                roles[role] = {"provider": prov or None, "model": model or None, "source": "default"}
        return roles

    def models(self, person_id: str) -> dict[str, Any]:
        """The person's providers, what each can do, and the model they chose for each role."""
        roles = self._own_roles(person_id)
        owner_id = memory_jobs.owner(self.pod)
        if person_id != owner_id:
            owner = self.pod.store.get_person_by_id(owner_id)
            # Search by meaning is one index for everyone: its model is the first person's choice, shown as theirs.
            # A provider of theirs embeds their own notes alone: this person's use the local model, the one shown
            # (nothing of the provider is).
            from wiki_engine.memory import LOCAL_EMBEDDER

            model = self.embedding_model()
            roles["embedding"] = {"source": "shared", "shared_by": called(owner) if owner else UNNAMED_AS,
                                  "model": model if model in EMBEDDING_MODELS.values() else LOCAL_EMBEDDER}
        agents = {a["name"]: {"provider": a["provider"], "model": a["model"], "fallbacks": a["fallbacks"]}
                  for a in self.list_agents(person_id)}
        return {"providers": self.list_providers(person_id), "roles": roles, "agents": agents}

    def set_role_model(self, person_id: str, role: str, ref: str) -> None:
        if role not in ROLES:
            raise StoreError(f"Unknown role {role!r}. Roles: {', '.join(ROLES)}.")
        if role == "chat":
            raise StoreError("The chat model is set per agent: `agent edit NAME --provider P --model M`.")
        name, _, model = ref.partition("/")
        if role == "embedding":
            owner_id = memory_jobs.owner(self.pod)
            if person_id != owner_id:
                owner = self.pod.store.get_person_by_id(owner_id)
                who, name = (called(owner), owner.name) if owner else (UNNAMED_AS, UNNAMED)
                set_up = "" if who == UNNAMED_AS else ", who set Hearth up"
                raise StoreError(f"Search by meaning is shared by everyone on this Hearth, so its model is chosen by "
                                 f"{who}{set_up} (Settings → Models as {name}; in a terminal: `--person {name!r} "
                                 f"models set embedding MODEL`). Nothing was changed.")
            model = self._embedding_ref(person_id, name, model)
        elif (prov := self._provider(person_id, name)) is None:
            raise StoreError(f"No provider named {name!r}. Add it first with `provider add`.")
        elif role in ("ingest", "ask_memory") and not memory_jobs.capable(prov):
            work = "write wiki pages" if role == "ingest" else "answer from memory"
            raise StoreError(f"The tiny built-in model cannot {work}: choose a model server on this machine (Ollama, "
                             f"LM Studio, llama.cpp) or a provider: `models set {role} PROVIDER/MODEL` (add one with "
                             "`provider add`). Nothing was changed.")
        ingest_before = self.role_choice(person_id, "ingest")
        self.pod.store.set_role_model(person_id, role, name, model)
        if self.role_choice(person_id, "ingest") != ingest_before:  # chosen, or followed (extraction's)
            # what the model before answered no page for (left the inbox unwritten) waits for the new one's say
            self.pod.memory_host.soon(memory_jobs.write_again, self.pod, person_id)
        if role == "embedding":
            # Re-embeds every source in the background, memory not open yet opened for it on its own thread; search
            # keeps working meanwhile.
            self.pod.memory_host.embedding_changed()

    def _embedding_ref(self, person_id: str, name: str, model: str) -> str:
        """The embedding model of a choice (a local one, or a provider's with an embeddings API), else StoreError."""
        from runtime_host.providers.embeddings import EMBEDDING_KINDS, embedding_model_of

        choices = "local/static (fast), local/minilm (better at meaning, slower to index) or PROVIDER/MODEL"
        if local_embedder("embedding", name, model):
            return model
        prov = self._provider(person_id, name)
        if prov is None and name == "local":
            raise StoreError(f"No local embedding model {model!r}: choose {choices}.")
        if prov is None:
            raise StoreError(f"No provider named {name!r}. Add it first with `provider add`, or choose {choices}.")
        if prov["kind"] not in EMBEDDING_KINDS:
            raise StoreError(f"{name!r} ({prov['kind']}) has no embeddings API: choose {choices} with an "
                             "OpenAI-compatible or Gemini provider.")
        model = model or embedding_model_of(prov) or ""
        if not model:
            raise StoreError(f"Say which embedding model of {name!r} to use: `models set embedding {name}/MODEL`.")
        return model

    def embedding_choices(self, person_id: str) -> list[dict[str, Any]]:
        """What the embedding role may be: the local models, then each of the person's providers that has an
        embeddings API, with the model it would use ({"ref", "provider", "model", "local"})."""
        from runtime_host.providers.embeddings import embedding_model_of

        out = [{"ref": f"local/{m}", "provider": "local", "model": m, "local": True} for m in ("static", "minilm")]
        for p in self.list_providers(person_id, builtin=False):
            model = embedding_model_of(p)
            if model:
                out.append({"ref": f"{p['name']}/{model}", "provider": p["name"], "model": model, "local": False})
        return out

    def embedding_model(self) -> str:
        """The embedding role's model: "static" or "minilm" (on this computer), or "PROVIDER/MODEL". Memory has
        one index per scope for everyone, so it follows the first person's choice (the one who set Hearth up);
        a provider's model embeds only that person's scopes (see MemoryHost.embedder_choice)."""
        info = self._own_roles(memory_jobs.owner(self.pod))["embedding"]  # read often (memory's background pass)
        if info.get("provider") and not local_embedder("embedding", info["provider"], info.get("model")):
            return f"{info['provider']}/{info.get('model') or ''}"
        return EMBEDDING_MODELS.get(info.get("model") or "", "static")

    def role_route(self, person_id: str, role: str) -> dict[str, Any] | None:
        """The person's route for a background role (following inheritance), or None when none is set."""
        choice = self.role_choice(person_id, role)
        return None if choice is None else self._route(person_id, *choice)

    def role_choice(self, person_id: str, role: str) -> tuple[str, str | None] | None:
        """The provider and model a background role's work goes to (inheritance followed), or None when none is
        chosen. Read from the person's choices alone, with no key read from the keyring (the Wiki's bar asks which
        on its clock): ``role_route`` adds the key."""
        if role not in ROLES:
            raise KeyError(f"Unknown role {role!r}. Roles: {', '.join(ROLES)}.")
        chosen = self.pod.store.role_models(person_id)
        asked = role
        while role in ROLES:
            row = chosen.get(role)
            if row is not None:
                name, model = row.provider, row.model
                break
            role = ROLES[role]
        else:  # a role's default: "embedded", "local/static"
            name, _, model = role.partition("/")
        return None if not name or local_embedder(asked, name, model) else (name, model or None)

    def allowlist(self, inst: AgentInstance, profile: AgentProfile) -> Any:
        """The agent's tool allowlist. Made once from its toolkits as they are then, and stored: an
        action that appears later (a new built-in, an MCP server's new tool) is not reachable until
        a person allows it."""
        from runtime_host.allowlist import Allowlist, catalog_of
        from runtime_host.tools import TOOLKITS

        if profile.allowlist:
            return Allowlist.from_json(inst.name, profile.allowlist)
        al = Allowlist.from_legacy_toolkits(inst.name, json.loads(profile.toolkits), catalog_of(TOOLKITS))
        self.pod.store.update_profile(profile.id, allowlist=al.to_json())
        return al

    def _binding(self, inst: AgentInstance, profile: AgentProfile) -> dict[str, Any]:
        allowlist = self.allowlist(inst, profile)
        wiki = self.pod.home / "memory" / "wiki"
        ro_paths = [wiki / "public", wiki / "private" / inst.person_id]
        for folder in ro_paths:  # the worker (and its sandbox) sees these; it refuses to start without its data folder
            folder.mkdir(parents=True, exist_ok=True)
        return {
            "mcp_tools": self.pod.mcp.offered(inst.person_id, allowlist),
            "person": inst.person_id,
            "agent": inst.id,
            "profile": {"name": inst.name, "system": profile.system_prompt, "toolkits": json.loads(profile.toolkits),
                        "allowlist": allowlist.to_json()},
            "routes": self._routes(inst.person_id, profile),
            "scratch": str(agent_dir(self.pod.home, inst.person_id, inst.id)),
            "data_dir": str(self.pod.home / "memory"),
            "ro_paths": [str(p) for p in ro_paths],
        }

    async def ensure_worker(self, inst: AgentInstance, profile: AgentProfile) -> WorkerHandle:
        key = (inst.person_id, inst.id)
        if self.pod.store.removing(inst.person_id):  # their removal began (or ended): nothing of theirs runs again
            raise StoreError(f"{inst.name} does not run: its person was removed from this Hearth, or is being "
                             "removed.")
        h = self.pod.supervisor.handle(key, inst.name, agent_dir(self.pod.home, inst.person_id, inst.id))
        if h.state == WorkerState.BUSY or (h.state == WorkerState.READY and h.epoch == self._epoch):
            return h  # warm: no binding (and no keyring read) needed
        return await self.pod.supervisor.ensure(key, inst.name, agent_dir(self.pod.home, inst.person_id, inst.id),
                                            self._binding(inst, profile), self._epoch)

    async def start_agent(self, person_id: str, name: str) -> dict[str, Any]:
        """Spawns the agent's worker now (it would otherwise start on first need)."""
        inst, profile = self.find_agent(person_id, name)
        handle = await self.ensure_worker(inst, profile)
        return handle.info()

    async def stop_agent(self, person_id: str, name: str) -> None:
        inst, _profile = self.find_agent(person_id, name)
        await self.pod.stops.stop_agent(person_id, name, "you (Stop on the agent)", waiting_too=False)
        handle = self.pod.supervisor.handles.get((inst.person_id, inst.id))
        if handle is not None:
            await handle.stop()

    async def delete_agent(self, person_id: str, name: str) -> None:
        """Deletes an agent: stops its turns and worker, removes its folder (its notes file, the files it wrote), its
        schedules, conversations and steps, and its own notes in memory (no one could see them any more) with what it
        had held back, and the extraction model's reasons for skipping messages of its conversations. What it put in
        the person's memory or everyone's stays, theirs to keep or delete there."""
        from runtime_host import schedule

        inst, _profile = self.find_agent(person_id, name)
        await self.stop_agent(person_id, name)
        self.pod.supervisor.handles.pop((inst.person_id, inst.id), None)
        self._remove_folder(inst.person_id, inst.id, name)  # first: a failure leaves everything else
        schedule.forget_schedules(self.pod.store.engine, inst.person_id, inst.id)  # and their runs: its chats go too
        # its conversations' message ids, read before they go: why the extraction model skipped one (which may
        # quote it) goes with them
        keys = [m.id for c in self.pod.store.list_conversations(inst.id) for m in self.pod.store.list_messages(c.id)]
        # Memory first: a process killed in between leaves the agent listed, to be deleted again, never its notes
        # in memory with no agent left to delete (they stayed in memory's files for good).
        await self.pod.in_memory_thread(
            lambda: self.pod.memory.forget_agent(inst.person_id, inst.id, elsewhere=False, keys=keys))
        self.pod.store.delete_agent(inst.id)
        self._epoch += 1
        self.pod.audit(person_id=inst.person_id, agent=name, kind="agent", action="deleted",
                   summary=f"Agent {name} deleted with its conversations and schedules.")
        self.pod.emit({"type": "agent.deleted", "person": inst.person_id, "agent": name})

    def _remove_folder(self, person_id: str, agent_id: str, name: str) -> None:
        """Removes a deleted agent's folder (agents/<person>/<agent>: its notes, the files it wrote, its logs), its
        worker stopped."""
        import shutil

        folder = self.pod.home / "agents" / person_id / agent_id
        try:
            shutil.rmtree(folder)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StoreError(f"Agent {name}'s folder {folder} could not be removed ({exc.strerror or exc}), so the "
                             "agent was not deleted. Make the folder writable (or remove it yourself), then delete "
                             "the agent again.") from exc

    async def restart_agent(self, person_id: str, name: str) -> dict[str, Any]:
        """Stops the agent's worker and starts a fresh one; also clears a fatal state."""
        inst, _profile = self.find_agent(person_id, name)
        await self.pod.stops.stop_agent(person_id, name, "you (Restart on the agent)", waiting_too=False)
        handle = self.pod.supervisor.handles.get((inst.person_id, inst.id))
        if handle is not None:
            await handle.stop()
            self.pod.supervisor.reset(handle.key, "restarted by the person")  # a fresh start: no crash history
        return await self.start_agent(person_id, name)
