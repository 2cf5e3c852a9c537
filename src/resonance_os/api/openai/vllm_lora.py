"""vLLM's runtime LoRA routes, ``POST /v1/load_lora_adapter`` and ``POST /v1/unload_lora_adapter``, on
the tenants' adapters of ``POST /v1/adapters`` (so a trainer's ``GRPOConfig.rollout_server`` works
against ``resonance serve`` as against vLLM; docs/serving.md).

Bodies and outcomes are vLLM 0.34.0's: ``{"lora_name", "lora_path", "load_inplace"}`` loads the adapter
folder ``lora_path`` as model ``lora_name`` and answers 200 with a ``Success: ...`` text; a name already
loaded is a 400 unless ``load_inplace`` is true, which replaces its weights for the requests that follow
(the version goes up, as ``replace: true`` does). ``{"lora_name"}`` unloads it (404 if there is none).
Failures are in vLLM's error shape, ``{"error": {"message", "type", "param", "code"}}`` with the HTTP
status as ``code`` and ``type`` such as ``BadRequestError``. Scoped as ``/v1/adapters`` is: names are the
caller's, and ``lora_path`` must be a folder under the caller's runs folder (absolute, or relative to
it); anything else is a 404, as a path vLLM cannot find. A folder that is not a LoRA adapter is a 400
(vLLM answers 500).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from resonance_os.api.http.deps import tenant
from resonance_os.api.openai.errors import OpenAIError
from resonance_os.api.openai.routes import OpenAIRoute, parse, serving
from resonance_os.api.openai.schemas import AdapterRegistration, Bool, Text
from resonance_os.api.persistence.tenants import TenantContext

ERROR_TYPES = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    409: "ConflictError",
    413: "RequestTooLargeError",
    429: "RateLimitError",
}
"""vLLM's error ``type`` by HTTP status (the names of the OpenAI SDK's exceptions)."""
VLLM_FIELDS = {"name": "lora_name", "path": "lora_path"}
"""``/v1/adapters``' field names as vLLM's bodies call them (the ``param`` of an error)."""


def vllm_error(error: OpenAIError) -> JSONResponse:
    """``error`` in vLLM's shape: the status is the ``code``, the type is named after it."""
    fallback = "InternalServerError" if error.status >= 500 else "BadRequestError"
    param = VLLM_FIELDS.get(error.param or "", error.param)
    body = {"message": error.message, "type": ERROR_TYPES.get(error.status, fallback), "param": param,
            "code": error.status}  # fmt: skip
    return JSONResponse({"error": body}, status_code=error.status, headers=error.headers)


class VLLMRoute(OpenAIRoute):
    """A route whose every failure (auth and limits included) is answered in vLLM's error shape."""

    render = staticmethod(vllm_error)


router = APIRouter(prefix="/v1", tags=["openai"], route_class=VLLMRoute)


class LoadLoRAAdapter(BaseModel):
    """vLLM's body; its other fields (``is_3d_lora_weight``) are ignored."""

    model_config = ConfigDict(extra="ignore")
    lora_name: Text = Field(min_length=1)
    lora_path: Text = Field(min_length=1)
    load_inplace: Bool = False


class UnloadLoRAAdapter(BaseModel):
    model_config = ConfigDict(extra="ignore")
    lora_name: Text = Field(min_length=1)


def _relative_run_path(runs: Path, path: str) -> str:
    """``path`` relative to the tenant's runs folder: an absolute path must lie under it (404 otherwise,
    as for a path vLLM cannot find); a relative one is checked by the registration."""
    if not Path(path).is_absolute():
        return path
    root, folder = runs.resolve(), Path(path).resolve()
    if not folder.is_relative_to(root):
        raise OpenAIError(404, f"no adapter folder {path!r} among your runs; lora_path must be a folder under "
                          f"{root} (your runs folder)", param="lora_path")  # fmt: skip
    return folder.relative_to(root).as_posix() or "."


def _registration(body: LoadLoRAAdapter, path: str) -> AdapterRegistration:
    """The ``/v1/adapters`` registration the body asks for (its name rules: a 400 naming lora_name)."""
    try:
        return AdapterRegistration(name=body.lora_name, path=path, replace=body.load_inplace)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = {"name": "lora_name", "path": "lora_path"}.get(str(err["loc"][0]), "body")
        raise OpenAIError(400, f"{field}: {err['msg']}", param=field) from None


@router.post("/load_lora_adapter")
async def load_lora_adapter(request: Request, ctx: TenantContext = Depends(tenant)) -> Response:
    """Load the adapter folder ``lora_path`` as the caller's model ``lora_name`` (vLLM's route)."""
    body: LoadLoRAAdapter = await parse(request, LoadLoRAAdapter)
    svc = serving(request)
    loaded = svc.adapter_version(ctx, body.lora_name) is not None
    if loaded and not body.load_inplace:
        raise OpenAIError(400, f"the LoRA adapter {body.lora_name!r} is loaded already; send load_inplace: "
                          "true to replace its weights", param="lora_name")  # fmt: skip
    registration = _registration(body, _relative_run_path(svc.tenant_runs(ctx), body.lora_path))
    await svc.register(ctx, registration.name, registration.path, replace=registration.replace)
    return PlainTextResponse(f"Success: LoRA adapter '{body.lora_name}' loaded.")


@router.post("/unload_lora_adapter")
async def unload_lora_adapter(request: Request, ctx: TenantContext = Depends(tenant)) -> Response:
    """Unload the caller's adapter ``lora_name`` (vLLM's route): requests running on it finish."""
    body: UnloadLoRAAdapter = await parse(request, UnloadLoRAAdapter)
    if serving(request).adapter_version(ctx, body.lora_name) is None:
        raise OpenAIError(404, f"the LoRA adapter {body.lora_name!r} is not loaded; GET /v1/models lists yours",
                          param="lora_name")  # fmt: skip
    await serving(request).unregister(ctx, body.lora_name)
    return PlainTextResponse(f"Success: LoRA adapter '{body.lora_name}' unloaded.")
