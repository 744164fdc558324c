"""The local tools' settings: ``turnkeep dev`` with its embedded servers, and
``turnkeep flower``; sections of ``Settings`` (runtime/settings.py) like the others."""

from __future__ import annotations

from pydantic import field_validator
from pydantic_settings import BaseSettings

from turnkeep.runtime.env import section


class DevSettings(BaseSettings):
    """``turnkeep dev`` on one machine (turnkeep/dev.py, turnkeep/embedded.py)."""

    model_config = section()

    #: where the Postgres and Redis it starts itself keep their files (unset:
    #: ``.run/embedded/``)
    embedded_dir: str = ""
    #: the machine's own servers, used when they answer
    local_postgres: str = "127.0.0.1:5432"
    local_redis: str = "127.0.0.1:6379"


class FlowerSettings(BaseSettings):
    """``turnkeep flower`` (turnkeep/cli/processes.py): never open by accident."""

    model_config = section("FLOWER_")

    #: ``user:password[,user:password]``, Flower's basic auth
    basic_auth: str = ""
    #: no authentication is meant (a trusted network only): 1, true, yes or on
    unsafe_noauth: bool = False
    #: the interface it binds (Flower's own default is every interface)
    address: str = "127.0.0.1"

    @field_validator("unsafe_noauth", mode="before")
    @classmethod
    def _switch(cls, value: object) -> bool:
        return str(value).strip().lower() in ("1", "true", "yes", "on")

    @field_validator("basic_auth", "address", mode="before")
    @classmethod
    def _stripped(cls, value: object) -> object:
        return value.strip() if isinstance(value, str) else value

    @field_validator("address")
    @classmethod
    def _address(cls, value: str) -> str:
        return value or "127.0.0.1"
