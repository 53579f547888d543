"""The ACL admin requests (4.9.4's ``AdminBrokerProcessor``), served when the broker's ACL is on.

UPDATE_AND_CREATE_ACL_CONFIG (50), DELETE_ACL_CONFIG (51), GET_BROKER_CLUSTER_ACL_INFO (52),
UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53) and GET_BROKER_CLUSTER_ACL_CONFIG (54), with 4.9's headers,
bodies, failure codes (209, 210, 211) and remarks, so ``mqadmin updateAclConfig``,
``deleteAccessConfig``, ``clusterAclConfigVersion``, ``updateGlobalWhiteAddr`` and
``getAccessConfigSubCommand`` work. Each change rewrites the ACL file (with its ``dataVersion``
one higher) and takes effect at once. The request guard lets only admin accounts reach them
(:data:`~rocketq.broker.acl.ACL_ADMIN_CODES`).

Deviation: 4.9 answers a too-short key with a remark that shows the secret key; rocketq's remark
names the access key only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from rocketq.broker.acl import AclAdminError, AclManager
from rocketq.protocol.acl import (
    ClusterAclConfig,
    CreateAccessConfigRequestHeader,
    DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader,
    PlainAccessConfig,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
)
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting import RemotingConnection

__all__ = ["AclProcessor"]

log = logging.getLogger(__name__)


def _split(text: str | None) -> tuple[str, ...] | None:
    # UtilAll.split: null stays null, anything else is String.split(",")
    return None if text is None else tuple(text.split(","))


class AclProcessor:
    """Handlers of codes 50-54 over one :class:`~rocketq.broker.acl.AclManager`.

    ``identity()`` gives ``(broker name, broker address, cluster name)`` for GET_BROKER_CLUSTER_ACL_INFO.
    """

    def __init__(self, acl: AclManager, identity: Callable[[], tuple[str, str, str]]) -> None:
        self._acl = acl
        self._identity = identity

    def handlers(self) -> dict[int, object]:
        return {
            RequestCode.UPDATE_AND_CREATE_ACL_CONFIG: self.update_account,
            RequestCode.DELETE_ACL_CONFIG: self.delete_account,
            RequestCode.GET_BROKER_CLUSTER_ACL_INFO: self.version,
            RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: self.update_global_white,
            RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG: self.cluster_config,
        }

    def update_account(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        h = CreateAccessConfigRequestHeader.from_ext_fields(request.ext_fields)
        config = PlainAccessConfig(
            access_key=h.access_key,
            secret_key=h.secret_key,
            white_remote_address=h.white_remote_address,
            admin=h.admin,
            default_topic_perm=h.default_topic_perm,
            default_group_perm=h.default_group_perm,
            topic_perms=_split(h.topic_perms),
            group_perms=_split(h.group_perms),
        )
        try:
            self._acl.update_account(config)
        except AclAdminError as exc:
            log.warning(
                "ACL account %s not updated (asked by %s): %s", h.access_key, conn.remote_address, exc
            )
            return request.response(code=ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED, remark=str(exc))
        log.info("ACL account %s updated by %s", h.access_key, conn.remote_address)
        return request.response()

    def delete_account(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        h = DeleteAccessConfigRequestHeader.from_ext_fields(request.ext_fields)
        try:
            deleted = self._acl.delete_account(h.access_key)
        except AclAdminError as exc:
            return request.response(code=ResponseCode.DELETE_ACL_CONFIG_FAILED, remark=str(exc))
        if not deleted:
            remark = f"The accesskey[{h.access_key}] corresponding to accessConfig has been deleted failed."
            return request.response(code=ResponseCode.DELETE_ACL_CONFIG_FAILED, remark=remark)
        log.info("ACL account %s deleted by %s", h.access_key, conn.remote_address)
        return request.response()

    def update_global_white(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        h = UpdateGlobalWhiteAddrsConfigRequestHeader.from_ext_fields(request.ext_fields)
        failed = f"The globalWhiteAddresses[{h.global_white_addrs}] has been updated failed."
        path = h.acl_file_full_path
        if path and Path(path).resolve() != self._acl.path.resolve():
            return request.response(code=ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED, remark=failed)
        try:
            self._acl.update_global_white(h.global_white_addrs.split(","))
        except AclAdminError as exc:
            return request.response(
                code=ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED, remark=str(exc)
            )
        log.info("ACL global white list set to %s by %s", h.global_white_addrs, conn.remote_address)
        return request.response()

    def version(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        name, addr, cluster = self._identity()
        header = GetBrokerAclConfigResponseHeader(
            version=self._acl.version_json,
            all_acl_file_version=self._acl.all_versions_json,
            broker_name=name,
            broker_addr=addr,
            cluster_name=cluster,
        )
        return request.response(ext_fields=header.to_ext_fields())

    def cluster_config(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        whites, configs = self._acl.cluster_config()
        body = ClusterAclConfig(global_white_addrs=tuple(whites), plain_access_configs=tuple(configs))
        return request.response(body=body.encode())
