"""JetStream API errors: one table, exact texts of nats-server v2.15.1.

Every error the JetStream API (and the publish-ack path) can answer with is an :class:`ApiError`
carrying the three values clients see in ``"error":{"code":…,"err_code":…,"description":…}``:

* ``code`` — the HTTP-like status (400, 404, 409, 412, 429, 500, 503);
* ``err_code`` — the stable JetStream code (10xxx) that clients branch on;
* ``description`` — the human text; templated errors substitute ``{err}``, ``{seq}``, … .

The table :data:`ERRORS` is nats-server's ``server/errors.json`` (the JetStream API errors
listed at https://docs.nats.io/reference/reference-protocols/nats_api_reference), keyed by ``err_code``. For every entry there is a
factory function named after the Go constant in snake case without the ``JS`` prefix and the
``Err``/``ErrF`` suffix (``JSStreamNotFoundErr`` → :func:`stream_not_found`,
``JSSequenceNotFoundErrF`` → :func:`sequence_not_found(seq) <sequence_not_found>`), and an
:class:`ErrCode` member with the same name in upper case (``ErrCode.STREAM_NOT_FOUND == 10059``).
Factories return a *fresh* exception each call (raising a shared instance would accumulate
tracebacks). Below the generated part are short aliases and helpers for the concrete texts the
server produces through the ``{err}`` templates (``maximum messages exceeded``, ``rollup not
permitted``, …), observed on the real v2.15.1 binary.

Pure module: no I/O, stdlib only.
"""

from __future__ import annotations

import enum
import re
from typing import Any, Callable, NamedTuple
from minijs.protocol.gostrings import go_quote


class ApiError(Exception):
    """A JetStream API error as sent to clients.

    ``str(err)`` is the description. Two errors compare equal when all three fields are equal.
    """

    def __init__(self, code: int, err_code: int, description: str) -> None:
        super().__init__(description)
        self.code = int(code)
        self.err_code = int(err_code)
        self.description = str(description)

    def to_json(self) -> dict[str, Any]:
        """The ``"error"`` object of an API reply (field order as the server emits it)."""
        return {"code": self.code, "err_code": self.err_code, "description": self.description}

    def is_(self, err_code: int) -> bool:
        """True if this error has the given ``err_code``."""
        return self.err_code == int(err_code)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ApiError):
            return NotImplemented
        return (self.code, self.err_code, self.description) == (
            other.code,
            other.err_code,
            other.description,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable exception, compared by value

    def __repr__(self) -> str:
        return f"ApiError({self.code}, {self.err_code}, {self.description!r})"

    def __str__(self) -> str:
        return self.description


class ErrorSpec(NamedTuple):
    code: int
    constant: str
    template: str


_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def make(err_code: int, **subs: Any) -> ApiError:
    """Build the error for ``err_code`` with its template placeholders substituted.

    Values are rendered like Go's ``%v`` (``str()``; ``ApiError``/exceptions by their text).
    Missing placeholders raise ``KeyError`` (a programming error, not a client error).
    """
    spec = ERRORS[err_code]

    def repl(m: re.Match[str]) -> str:
        return _render(subs[m.group(1)])

    return ApiError(spec.code, err_code, _PLACEHOLDER.sub(repl, spec.template))


def _render(value: Any) -> str:
    if isinstance(value, ApiError):
        return value.description
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def wrap(factory: Callable[[Any], ApiError], err: BaseException | str) -> ApiError:
    """Go's ``NewJS…Error(err, Unless(err))``: an ``ApiError`` passes through unchanged,
    anything else is wrapped by ``factory`` (a one-argument ``{err}`` factory)."""
    if isinstance(err, ApiError):
        return err
    return factory(str(err))


def spec(err_code: int) -> ErrorSpec:
    """The table entry for ``err_code`` (``KeyError`` if unknown)."""
    return ERRORS[err_code]


# --------------------------------------------------------------------------------------------
# The table (server/errors.json): err_code -> (code, Go constant, description template)
# --------------------------------------------------------------------------------------------

ERRORS: dict[int, ErrorSpec] = {
    k: ErrorSpec(*v)
    for k, v in {
    10002: (400, 'JSAccountResourcesExceededErr', 'resource limits exceeded for account'),
    10003: (400, 'JSBadRequestErr', 'bad request'),
    10004: (503, 'JSClusterIncompleteErr', 'incomplete results'),
    10005: (400, 'JSClusterNoPeersErrF', '{err}'),
    10006: (500, 'JSClusterNotActiveErr', 'JetStream not in clustered mode'),
    10007: (500, 'JSClusterNotAssignedErr', 'JetStream cluster not assigned to this server'),
    10008: (503, 'JSClusterNotAvailErr', 'JetStream system temporarily unavailable'),
    10009: (500, 'JSClusterNotLeaderErr', 'JetStream cluster can not handle request'),
    10010: (503, 'JSClusterRequiredErr', 'JetStream clustering support required'),
    10011: (400, 'JSClusterTagsErr', 'tags placement not supported for operation'),
    10012: (500, 'JSConsumerCreateErrF', '{err}'),
    10013: (400, 'JSConsumerNameExistErr', 'consumer name already in use'),
    10014: (404, 'JSConsumerNotFoundErr', 'consumer not found'),
    10015: (400, 'JSSnapshotDeliverSubjectInvalidErr', 'deliver subject not valid'),
    10016: (400, 'JSConsumerDurableNameNotInSubjectErr', 'consumer expected to be durable but no durable name set in subject'),
    10017: (400, 'JSConsumerDurableNameNotMatchSubjectErr', 'consumer name in subject does not match durable name in request'),
    10018: (400, 'JSConsumerDurableNameNotSetErr', 'consumer expected to be durable but a durable name was not set'),
    10019: (400, 'JSConsumerEphemeralWithDurableInSubjectErr', 'consumer expected to be ephemeral but detected a durable name set in subject'),
    10020: (400, 'JSConsumerEphemeralWithDurableNameErr', 'consumer expected to be ephemeral but a durable name was set in request'),
    10021: (400, 'JSStreamExternalApiOverlapErrF', 'stream external api prefix {prefix} must not overlap with {subject}'),
    10022: (400, 'JSStreamExternalDelPrefixOverlapsErrF', 'stream external delivery prefix {prefix} overlaps with stream subject {subject}'),
    10023: (503, 'JSInsufficientResourcesErr', 'insufficient resources'),
    10024: (400, 'JSStreamInvalidExternalDeliverySubjErrF', 'stream external delivery prefix {prefix} must not contain wildcards'),
    10025: (400, 'JSInvalidJSONErr', 'invalid JSON: {err}'),
    10026: (400, 'JSMaximumConsumersLimitErr', 'maximum consumers limit reached'),
    10027: (400, 'JSMaximumStreamsLimitErr', 'maximum number of streams reached'),
    10028: (500, 'JSMemoryResourcesExceededErr', 'insufficient memory resources available'),
    10029: (500, 'JSMirrorConsumerSetupFailedErrF', '{err}'),
    10030: (400, 'JSMirrorMaxMessageSizeTooBigErr', 'stream mirror must have max message size >= source'),
    10031: (400, 'JSMirrorWithSourcesErr', 'stream mirrors can not also contain other sources'),
    10032: (400, 'JSMirrorWithStartSeqAndTimeErr', 'stream mirrors can not have both start seq and start time configured'),
    10033: (400, 'JSMirrorWithSubjectFiltersErr', 'stream mirrors can not contain filtered subjects'),
    10034: (400, 'JSMirrorWithSubjectsErr', 'stream mirrors can not contain subjects'),
    10035: (503, 'JSNoAccountErr', 'account not found'),
    10036: (503, 'JSClusterUnSupportFeatureErr', 'not currently supported in clustered mode'),
    10037: (404, 'JSNoMessageFoundErr', 'no message found'),
    10038: (400, 'JSNotEmptyRequestErr', 'expected an empty request payload'),
    10039: (503, 'JSNotEnabledForAccountErr', 'JetStream not enabled for account'),
    10040: (400, 'JSClusterPeerNotMemberErr', 'peer not a member'),
    10041: (500, 'JSRaftGeneralErrF', '{err}'),
    10042: (500, 'JSRestoreSubscribeFailedErrF', 'JetStream unable to subscribe to restore snapshot {subject}: {err}'),
    10043: (400, 'JSSequenceNotFoundErrF', 'sequence {seq} not found'),
    10044: (400, 'JSClusterServerNotMemberErr', 'server is not a member of the cluster'),
    10045: (500, 'JSSourceConsumerSetupFailedErrF', '{err}'),
    10046: (400, 'JSSourceMaxMessageSizeTooBigErr', 'stream source must have max message size >= target'),
    10047: (500, 'JSStorageResourcesExceededErr', 'insufficient storage resources available'),
    10048: (500, 'JSStreamAssignmentErrF', '{err}'),
    10049: (500, 'JSStreamCreateErrF', '{err}'),
    10050: (500, 'JSStreamDeleteErrF', '{err}'),
    10051: (500, 'JSStreamGeneralErrorF', '{err}'),
    10052: (500, 'JSStreamInvalidConfigF', '{err}'),
    10053: (500, 'JSStreamLimitsErrF', '{err}'),
    10054: (400, 'JSStreamMessageExceedsMaximumErr', 'message size exceeds maximum allowed'),
    10055: (400, 'JSStreamMirrorNotUpdatableErr', 'stream mirror configuration can not be updated'),
    10056: (400, 'JSStreamMismatchErr', 'stream name in subject does not match request'),
    10057: (500, 'JSStreamMsgDeleteFailedF', '{err}'),
    10058: (400, 'JSStreamNameExistErr', 'stream name already in use with a different configuration'),
    10059: (404, 'JSStreamNotFoundErr', 'stream not found'),
    10060: (400, 'JSStreamNotMatchErr', 'expected stream does not match'),
    10061: (400, 'JSStreamReplicasNotUpdatableErr', 'Replicas configuration can not be updated'),
    10062: (500, 'JSStreamRestoreErrF', 'restore failed: {err}'),
    10063: (503, 'JSStreamSequenceNotMatchErr', 'expected stream sequence does not match'),
    10064: (500, 'JSStreamSnapshotErrF', 'snapshot failed: {err}'),
    10065: (400, 'JSStreamSubjectOverlapErr', 'subjects overlap with an existing stream'),
    10066: (500, 'JSStreamTemplateCreateErrF', '{err}'),
    10067: (500, 'JSStreamTemplateDeleteErrF', '{err}'),
    10068: (404, 'JSStreamTemplateNotFoundErr', 'template not found'),
    10069: (500, 'JSStreamUpdateErrF', '{err}'),
    10070: (400, 'JSStreamWrongLastMsgIDErrF', 'wrong last msg ID: {id}'),
    10071: (400, 'JSStreamWrongLastSequenceErrF', 'wrong last sequence: {seq}'),
    10072: (500, 'JSTempStorageFailedErr', 'JetStream unable to open temp storage for restore'),
    10073: (400, 'JSTemplateNameNotMatchSubjectErr', 'template name in subject does not match request'),
    10074: (500, 'JSStreamReplicasNotSupportedErr', 'replicas > 1 not supported in non-clustered mode'),
    10075: (503, 'JSPeerRemapErr', 'peer remap failed'),
    10076: (503, 'JSNotEnabledErr', 'JetStream not enabled'),
    10077: (503, 'JSStreamStoreFailedF', '{err}'),
    10078: (400, 'JSConsumerConfigRequiredErr', 'consumer config required'),
    10079: (400, 'JSConsumerDeliverToWildcardsErr', 'consumer deliver subject has wildcards'),
    10080: (400, 'JSConsumerPushMaxWaitingErr', 'consumer in push mode can not set max waiting'),
    10081: (400, 'JSConsumerDeliverCycleErr', 'consumer deliver subject forms a cycle'),
    10082: (400, 'JSConsumerMaxPendingAckPolicyRequiredErr', 'consumer requires ack policy for max ack pending'),
    10083: (400, 'JSConsumerSmallHeartbeatErr', 'consumer idle heartbeat needs to be >= 100ms'),
    10084: (400, 'JSConsumerPullRequiresAckErr', 'consumer in pull mode requires explicit ack policy on workqueue stream'),
    10085: (400, 'JSConsumerPullNotDurableErr', 'consumer in pull mode requires a durable name'),
    10086: (400, 'JSConsumerPullWithRateLimitErr', 'consumer in pull mode can not have rate limit set'),
    10087: (400, 'JSConsumerMaxWaitingNegativeErr', 'consumer max waiting needs to be positive'),
    10088: (400, 'JSConsumerHBRequiresPushErr', 'consumer idle heartbeat requires a push based consumer'),
    10089: (400, 'JSConsumerFCRequiresPushErr', 'consumer flow control requires a push based consumer'),
    10090: (400, 'JSConsumerDirectRequiresPushErr', 'consumer direct requires a push based consumer'),
    10091: (400, 'JSConsumerDirectRequiresEphemeralErr', 'consumer direct requires an ephemeral consumer'),
    10092: (400, 'JSConsumerOnMappedErr', 'consumer direct on a mapped consumer'),
    10093: (400, 'JSConsumerFilterNotSubsetErr', 'consumer filter subject is not a valid subset of the interest subjects'),
    10094: (400, 'JSConsumerInvalidPolicyErrF', '{err}'),
    10095: (400, 'JSConsumerInvalidSamplingErrF', 'failed to parse consumer sampling configuration: {err}'),
    10096: (500, 'JSStreamInvalidErr', 'stream not valid'),
    10097: (400, 'JSStreamHeaderExceedsMaximumErr', 'header size exceeds maximum allowed of 64k'),
    10098: (400, 'JSConsumerWQRequiresExplicitAckErr', 'workqueue stream requires explicit ack'),
    10099: (400, 'JSConsumerWQMultipleUnfilteredErr', 'multiple non-filtered consumers not allowed on workqueue stream'),
    10100: (400, 'JSConsumerWQConsumerNotUniqueErr', 'filtered consumer not unique on workqueue stream'),
    10101: (400, 'JSConsumerWQConsumerNotDeliverAllErr', 'consumer must be deliver all on workqueue stream'),
    10102: (400, 'JSConsumerNameTooLongErrF', 'consumer name is too long, maximum allowed is {max}'),
    10103: (400, 'JSConsumerBadDurableNameErr', "durable name can not contain '.', '*', '>'"),
    10104: (500, 'JSConsumerStoreFailedErrF', 'error creating store for consumer: {err}'),
    10105: (400, 'JSConsumerExistingActiveErr', 'consumer already exists and is still active'),
    10106: (400, 'JSConsumerReplacementWithDifferentNameErr', 'consumer replacement durable config not the same'),
    10107: (400, 'JSConsumerDescriptionTooLongErrF', 'consumer description is too long, maximum allowed is {max}'),
    10108: (400, 'JSConsumerWithFlowControlNeedsHeartbeats', 'consumer with flow control also needs heartbeats'),
    10109: (400, 'JSStreamSealedErr', 'invalid operation on sealed stream'),
    10110: (500, 'JSStreamPurgeFailedF', '{err}'),
    10111: (500, 'JSStreamRollupFailedF', '{err}'),
    10112: (400, 'JSConsumerInvalidDeliverSubject', 'invalid push consumer deliver subject'),
    10113: (400, 'JSStreamMaxBytesRequired', 'account requires a stream config to have max bytes set'),
    10114: (400, 'JSConsumerMaxRequestBatchNegativeErr', 'consumer max request batch needs to be > 0'),
    10115: (400, 'JSConsumerMaxRequestExpiresTooSmall', 'consumer max request expires needs to be >= 1ms'),
    10116: (400, 'JSConsumerMaxDeliverBackoffErr', 'max deliver is required to be > length of backoff values'),
    10117: (500, 'JSStreamInfoMaxSubjectsErr', 'subject details would exceed maximum allowed'),
    10118: (500, 'JSStreamOfflineErr', 'stream is offline'),
    10119: (500, 'JSConsumerOfflineErr', 'consumer is offline'),
    10120: (400, 'JSNoLimitsErr', 'no JetStream default or applicable tiered limit present'),
    10121: (400, 'JSConsumerMaxPendingAckExcessErrF', 'consumer max ack pending exceeds system limit of {limit}'),
    10122: (400, 'JSStreamMaxStreamBytesExceeded', 'stream max bytes exceeds account limit max stream bytes'),
    10123: (400, 'JSStreamMoveAndScaleErr', 'can not move and scale a stream in a single update'),
    10124: (400, 'JSStreamMoveInProgressErr', 'stream move already in progress'),
    10125: (400, 'JSConsumerMaxRequestBatchExceededF', 'consumer max request batch exceeds server limit of {limit}'),
    10126: (400, 'JSConsumerReplicasExceedsStream', 'consumer config replica count exceeds parent stream'),
    10127: (400, 'JSConsumerNameContainsPathSeparatorsErr', 'Consumer name can not contain path separators'),
    10128: (400, 'JSStreamNameContainsPathSeparatorsErr', 'Stream name can not contain path separators'),
    10129: (400, 'JSStreamReconfigureNotInProgressErr', 'stream reconfiguration not in progress'),
    10130: (400, 'JSStreamNameExistRestoreFailedErr', 'stream name already in use, cannot restore'),
    10131: (400, 'JSConsumerCreateFilterSubjectMismatchErr', 'Consumer create request did not match filtered subject from create subject'),
    10132: (400, 'JSConsumerCreateDurableAndNameMismatch', 'Consumer Durable and Name have to be equal if both are provided'),
    10133: (400, 'JSReplicasCountCannotBeNegative', 'replicas count cannot be negative'),
    10134: (400, 'JSConsumerReplicasShouldMatchStream', "consumer config replicas must match interest retention stream's replicas"),
    10135: (400, 'JSConsumerMetadataLengthErrF', 'consumer metadata exceeds maximum size of {limit}'),
    10136: (400, 'JSConsumerDuplicateFilterSubjects', 'consumer cannot have both FilterSubject and FilterSubjects specified'),
    10137: (400, 'JSConsumerMultipleFiltersNotAllowed', 'consumer with multiple subject filters cannot use subject based API'),
    10138: (400, 'JSConsumerOverlappingSubjectFilters', 'consumer subject filters cannot overlap'),
    10139: (400, 'JSConsumerEmptyFilter', 'consumer filter in FilterSubjects cannot be empty'),
    10140: (400, 'JSSourceDuplicateDetected', 'duplicate source configuration detected'),
    10141: (400, 'JSSourceInvalidStreamName', 'sourced stream name is invalid'),
    10142: (400, 'JSMirrorInvalidStreamName', 'mirrored stream name is invalid'),
    10143: (400, 'JSMirrorWithFirstSeqErr', 'stream mirrors can not have first sequence configured'),
    10144: (400, 'JSSourceMultipleFiltersNotAllowed', 'source with multiple subject transforms cannot also have a single subject filter'),
    10145: (400, 'JSSourceInvalidSubjectFilter', 'source transform source: {err}'),
    10146: (400, 'JSSourceInvalidTransformDestination', 'source transform: {err}'),
    10147: (400, 'JSSourceOverlappingSubjectFilters', 'source filters can not overlap'),
    10148: (400, 'JSConsumerAlreadyExists', 'consumer already exists'),
    10149: (400, 'JSConsumerDoesNotExist', 'consumer does not exist'),
    10150: (400, 'JSMirrorMultipleFiltersNotAllowed', 'mirror with multiple subject transforms cannot also have a single subject filter'),
    10151: (400, 'JSMirrorInvalidSubjectFilter', 'mirror transform source: {err}'),
    10152: (400, 'JSMirrorOverlappingSubjectFilters', 'mirror subject filters can not overlap'),
    10153: (400, 'JSConsumerInactiveThresholdExcess', 'consumer inactive threshold exceeds system limit of {limit}'),
    10154: (400, 'JSMirrorInvalidTransformDestination', 'mirror transform: {err}'),
    10155: (400, 'JSStreamTransformInvalidSource', 'stream transform source: {err}'),
    10156: (400, 'JSStreamTransformInvalidDestination', 'stream transform: {err}'),
    10157: (400, 'JSPedanticErrF', 'pedantic mode: {err}'),
    10158: (409, 'JSStreamDuplicateMessageConflict', 'duplicate message id is in process'),
    10159: (400, 'JSConsumerPriorityPolicyWithoutGroup', 'Setting PriorityPolicy requires at least one PriorityGroup to be set'),
    10160: (400, 'JSConsumerInvalidPriorityGroupErr', 'Provided priority group does not exist for this consumer'),
    10161: (400, 'JSConsumerEmptyGroupName', 'Group name cannot be an empty string'),
    10162: (400, 'JSConsumerInvalidGroupNameErr', 'Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 characters'),
    10163: (503, 'JSStreamExpectedLastSeqPerSubjectNotReady', 'expected last sequence per subject temporarily unavailable'),
    10164: (400, 'JSStreamWrongLastSequenceConstantErr', 'wrong last sequence'),
    10165: (400, 'JSMessageTTLInvalidErr', 'invalid per-message TTL'),
    10166: (400, 'JSMessageTTLDisabledErr', 'per-message TTL is disabled'),
    10167: (429, 'JSStreamTooManyRequests', 'too many requests'),
    10168: (400, 'JSMessageIncrDisabledErr', 'message counters is disabled'),
    10169: (400, 'JSMessageIncrMissingErr', 'message counter increment is missing'),
    10170: (400, 'JSMessageIncrPayloadErr', 'message counter has payload'),
    10171: (400, 'JSMessageIncrInvalidErr', 'message counter increment is invalid'),
    10172: (400, 'JSMessageCounterBrokenErr', 'message counter is broken'),
    10173: (400, 'JSMirrorWithCountersErr', 'stream mirrors can not also calculate counters'),
    10174: (400, 'JSAtomicPublishDisabledErr', 'atomic publish is disabled'),
    10175: (400, 'JSAtomicPublishMissingSeqErr', 'atomic publish sequence is missing'),
    10176: (400, 'JSAtomicPublishIncompleteBatchErr', 'atomic publish batch is incomplete'),
    10177: (400, 'JSAtomicPublishUnsupportedHeaderBatchErr', 'atomic publish unsupported header used: {header}'),
    10178: (400, 'JSConsumerPushWithPriorityGroupErr', 'priority groups can not be used with push consumers'),
    10179: (400, 'JSAtomicPublishInvalidBatchIDErr', 'atomic publish batch ID is invalid'),
    10180: (412, 'JSStreamMinLastSeqErr', 'min last sequence'),
    10181: (400, 'JSConsumerAckPolicyInvalidErr', 'consumer ack policy invalid'),
    10182: (400, 'JSConsumerReplayPolicyInvalidErr', 'consumer replay policy invalid'),
    10183: (400, 'JSConsumerAckWaitNegativeErr', 'consumer ack wait needs to be positive'),
    10184: (400, 'JSConsumerBackOffNegativeErr', 'consumer backoff needs to be positive'),
    10185: (412, 'JSRequiredApiLevelErr', 'JetStream minimum api level required'),
    10186: (400, 'JSMirrorWithMsgSchedulesErr', 'stream mirrors can not also schedule messages'),
    10187: (400, 'JSSourceWithMsgSchedulesErr', 'stream source can not also schedule messages'),
    10188: (400, 'JSMessageSchedulesDisabledErr', 'message schedules is disabled'),
    10189: (400, 'JSMessageSchedulesPatternInvalidErr', 'message schedules pattern is invalid'),
    10190: (400, 'JSMessageSchedulesTargetInvalidErr', 'message schedules target is invalid'),
    10191: (400, 'JSMessageSchedulesTTLInvalidErr', 'message schedules invalid per-message TTL'),
    10192: (400, 'JSMessageSchedulesRollupInvalidErr', 'message schedules invalid rollup'),
    10193: (400, 'JSStreamExpectedLastSeqPerSubjectInvalid', 'missing sequence for expected last sequence per subject'),
    10194: (500, 'JSStreamOfflineReasonErrF', 'stream is offline: {err}'),
    10195: (500, 'JSConsumerOfflineReasonErrF', 'consumer is offline: {err}'),
    10196: (400, 'JSConsumerPriorityGroupWithPolicyNone', 'consumer can not have priority groups when policy is none'),
    10197: (400, 'JSConsumerPinnedTTLWithoutPriorityPolicyNone', 'PinnedTTL cannot be set when PriorityPolicy is none'),
    10198: (400, 'JSMirrorWithAtomicPublishErr', 'stream mirrors can not also use atomic publishing'),
    10199: (400, 'JSAtomicPublishTooLargeBatchErrF', 'atomic publish batch is too large: {size}'),
    10200: (400, 'JSAtomicPublishInvalidBatchCommitErr', 'atomic publish batch commit is invalid'),
    10201: (400, 'JSAtomicPublishContainsDuplicateMessageErr', 'atomic publish batch contains duplicate message id'),
    10202: (400, 'JSClusterServerMemberChangeInflightErr', 'cluster member change is in progress'),
    10203: (400, 'JSMessageSchedulesSourceInvalidErr', 'message schedules source is invalid'),
    10204: (400, 'JSConsumerInvalidResetErr', 'invalid reset: {err}'),
    10205: (400, 'JSBatchPublishDisabledErr', 'batch publish is disabled'),
    10206: (400, 'JSBatchPublishInvalidPatternErr', 'batch publish pattern is invalid'),
    10207: (400, 'JSBatchPublishInvalidBatchIDErr', 'batch publish ID is invalid'),
    10208: (400, 'JSBatchPublishUnknownBatchIDErr', 'batch publish ID unknown'),
    10209: (400, 'JSMirrorWithBatchPublishErr', 'stream mirrors can not also use batch publishing'),
    10210: (429, 'JSAtomicPublishTooManyInflight', 'atomic publish too many inflight'),
    10211: (429, 'JSBatchPublishTooManyInflight', 'batch publish too many inflight'),
    10212: (400, 'JSMessageSchedulesSchedulerInvalidErr', 'message schedules invalid scheduler'),
    10213: (400, 'JSMirrorDurableConsumerCfgInvalid', 'stream mirror consumer config is invalid'),
    10214: (400, 'JSMirrorConsumerRequiresAckFCErr', 'stream mirror consumer requires flow control ack policy'),
    10215: (400, 'JSSourceDurableConsumerCfgInvalid', 'stream source consumer config is invalid'),
    10216: (400, 'JSSourceDurableConsumerDuplicateDetected', 'duplicate stream source consumer detected'),
    10217: (400, 'JSSourceConsumerRequiresAckFCErr', 'stream source consumer requires flow control ack policy'),
    10218: (400, 'JSConsumerAckFCRequiresPushErr', 'flow control ack policy requires a push based consumer'),
    10219: (400, 'JSConsumerAckFCRequiresFCErr', 'flow control ack policy requires flow control'),
    10220: (400, 'JSConsumerAckFCRequiresMaxAckPendingErr', 'flow control ack policy requires max ack pending'),
    10221: (400, 'JSConsumerAckFCRequiresNoAckWaitErr', 'flow control ack policy requires unset ack wait'),
    10222: (400, 'JSConsumerAckFCRequiresNoMaxDeliverErr', 'flow control ack policy requires unset max deliver'),
    10223: (400, 'JSMessageSchedulesTimeZoneInvalidErr', 'message schedules time zone is invalid'),
    10224: (400, 'JSClusterRescueErr', 'JetStream system rescue not applied: {err}'),
    10225: (400, 'JSConsumerStreamIdentityMismatchF', "consumer's stream identity does not match: {msg}"),
    10226: (400, 'JSStreamReconfigureInProgressErr', 'stream reconfiguration already in progress'),
    10227: (400, 'JSMessageSourceHdrNotAllowedErr', 'message stream source header is not allowed'),
    }.items()
}


class ErrCode(enum.IntEnum):
    """Named ``err_code`` values (``ErrCode.STREAM_NOT_FOUND == 10059``)."""

    ACCOUNT_RESOURCES_EXCEEDED = 10002
    BAD_REQUEST = 10003
    CLUSTER_INCOMPLETE = 10004
    CLUSTER_NO_PEERS = 10005
    CLUSTER_NOT_ACTIVE = 10006
    CLUSTER_NOT_ASSIGNED = 10007
    CLUSTER_NOT_AVAIL = 10008
    CLUSTER_NOT_LEADER = 10009
    CLUSTER_REQUIRED = 10010
    CLUSTER_TAGS = 10011
    CONSUMER_CREATE = 10012
    CONSUMER_NAME_EXIST = 10013
    CONSUMER_NOT_FOUND = 10014
    SNAPSHOT_DELIVER_SUBJECT_INVALID = 10015
    CONSUMER_DURABLE_NAME_NOT_IN_SUBJECT = 10016
    CONSUMER_DURABLE_NAME_NOT_MATCH_SUBJECT = 10017
    CONSUMER_DURABLE_NAME_NOT_SET = 10018
    CONSUMER_EPHEMERAL_WITH_DURABLE_IN_SUBJECT = 10019
    CONSUMER_EPHEMERAL_WITH_DURABLE_NAME = 10020
    STREAM_EXTERNAL_API_OVERLAP = 10021
    STREAM_EXTERNAL_DEL_PREFIX_OVERLAPS = 10022
    INSUFFICIENT_RESOURCES = 10023
    STREAM_INVALID_EXTERNAL_DELIVERY_SUBJ = 10024
    INVALID_JSON = 10025
    MAXIMUM_CONSUMERS_LIMIT = 10026
    MAXIMUM_STREAMS_LIMIT = 10027
    MEMORY_RESOURCES_EXCEEDED = 10028
    MIRROR_CONSUMER_SETUP_FAILED = 10029
    MIRROR_MAX_MESSAGE_SIZE_TOO_BIG = 10030
    MIRROR_WITH_SOURCES = 10031
    MIRROR_WITH_START_SEQ_AND_TIME = 10032
    MIRROR_WITH_SUBJECT_FILTERS = 10033
    MIRROR_WITH_SUBJECTS = 10034
    NO_ACCOUNT = 10035
    CLUSTER_UN_SUPPORT_FEATURE = 10036
    NO_MESSAGE_FOUND = 10037
    NOT_EMPTY_REQUEST = 10038
    NOT_ENABLED_FOR_ACCOUNT = 10039
    CLUSTER_PEER_NOT_MEMBER = 10040
    RAFT_GENERAL = 10041
    RESTORE_SUBSCRIBE_FAILED = 10042
    SEQUENCE_NOT_FOUND = 10043
    CLUSTER_SERVER_NOT_MEMBER = 10044
    SOURCE_CONSUMER_SETUP_FAILED = 10045
    SOURCE_MAX_MESSAGE_SIZE_TOO_BIG = 10046
    STORAGE_RESOURCES_EXCEEDED = 10047
    STREAM_ASSIGNMENT = 10048
    STREAM_CREATE = 10049
    STREAM_DELETE = 10050
    STREAM_GENERAL = 10051
    STREAM_INVALID_CONFIG = 10052
    STREAM_LIMITS = 10053
    STREAM_MESSAGE_EXCEEDS_MAXIMUM = 10054
    STREAM_MIRROR_NOT_UPDATABLE = 10055
    STREAM_MISMATCH = 10056
    STREAM_MSG_DELETE_FAILED = 10057
    STREAM_NAME_EXIST = 10058
    STREAM_NOT_FOUND = 10059
    STREAM_NOT_MATCH = 10060
    STREAM_REPLICAS_NOT_UPDATABLE = 10061
    STREAM_RESTORE = 10062
    STREAM_SEQUENCE_NOT_MATCH = 10063
    STREAM_SNAPSHOT = 10064
    STREAM_SUBJECT_OVERLAP = 10065
    STREAM_TEMPLATE_CREATE = 10066
    STREAM_TEMPLATE_DELETE = 10067
    STREAM_TEMPLATE_NOT_FOUND = 10068
    STREAM_UPDATE = 10069
    STREAM_WRONG_LAST_MSG_ID = 10070
    STREAM_WRONG_LAST_SEQUENCE = 10071
    TEMP_STORAGE_FAILED = 10072
    TEMPLATE_NAME_NOT_MATCH_SUBJECT = 10073
    STREAM_REPLICAS_NOT_SUPPORTED = 10074
    PEER_REMAP = 10075
    NOT_ENABLED = 10076
    STREAM_STORE_FAILED = 10077
    CONSUMER_CONFIG_REQUIRED = 10078
    CONSUMER_DELIVER_TO_WILDCARDS = 10079
    CONSUMER_PUSH_MAX_WAITING = 10080
    CONSUMER_DELIVER_CYCLE = 10081
    CONSUMER_MAX_PENDING_ACK_POLICY_REQUIRED = 10082
    CONSUMER_SMALL_HEARTBEAT = 10083
    CONSUMER_PULL_REQUIRES_ACK = 10084
    CONSUMER_PULL_NOT_DURABLE = 10085
    CONSUMER_PULL_WITH_RATE_LIMIT = 10086
    CONSUMER_MAX_WAITING_NEGATIVE = 10087
    CONSUMER_HB_REQUIRES_PUSH = 10088
    CONSUMER_FC_REQUIRES_PUSH = 10089
    CONSUMER_DIRECT_REQUIRES_PUSH = 10090
    CONSUMER_DIRECT_REQUIRES_EPHEMERAL = 10091
    CONSUMER_ON_MAPPED = 10092
    CONSUMER_FILTER_NOT_SUBSET = 10093
    CONSUMER_INVALID_POLICY = 10094
    CONSUMER_INVALID_SAMPLING = 10095
    STREAM_INVALID = 10096
    STREAM_HEADER_EXCEEDS_MAXIMUM = 10097
    CONSUMER_WQ_REQUIRES_EXPLICIT_ACK = 10098
    CONSUMER_WQ_MULTIPLE_UNFILTERED = 10099
    CONSUMER_WQ_CONSUMER_NOT_UNIQUE = 10100
    CONSUMER_WQ_CONSUMER_NOT_DELIVER_ALL = 10101
    CONSUMER_NAME_TOO_LONG = 10102
    CONSUMER_BAD_DURABLE_NAME = 10103
    CONSUMER_STORE_FAILED = 10104
    CONSUMER_EXISTING_ACTIVE = 10105
    CONSUMER_REPLACEMENT_WITH_DIFFERENT_NAME = 10106
    CONSUMER_DESCRIPTION_TOO_LONG = 10107
    CONSUMER_WITH_FLOW_CONTROL_NEEDS_HEARTBEATS = 10108
    STREAM_SEALED = 10109
    STREAM_PURGE_FAILED = 10110
    STREAM_ROLLUP_FAILED = 10111
    CONSUMER_INVALID_DELIVER_SUBJECT = 10112
    STREAM_MAX_BYTES_REQUIRED = 10113
    CONSUMER_MAX_REQUEST_BATCH_NEGATIVE = 10114
    CONSUMER_MAX_REQUEST_EXPIRES_TOO_SMALL = 10115
    CONSUMER_MAX_DELIVER_BACKOFF = 10116
    STREAM_INFO_MAX_SUBJECTS = 10117
    STREAM_OFFLINE = 10118
    CONSUMER_OFFLINE = 10119
    NO_LIMITS = 10120
    CONSUMER_MAX_PENDING_ACK_EXCESS = 10121
    STREAM_MAX_STREAM_BYTES_EXCEEDED = 10122
    STREAM_MOVE_AND_SCALE = 10123
    STREAM_MOVE_IN_PROGRESS = 10124
    CONSUMER_MAX_REQUEST_BATCH_EXCEEDED = 10125
    CONSUMER_REPLICAS_EXCEEDS_STREAM = 10126
    CONSUMER_NAME_CONTAINS_PATH_SEPARATORS = 10127
    STREAM_NAME_CONTAINS_PATH_SEPARATORS = 10128
    STREAM_RECONFIGURE_NOT_IN_PROGRESS = 10129
    STREAM_NAME_EXIST_RESTORE_FAILED = 10130
    CONSUMER_CREATE_FILTER_SUBJECT_MISMATCH = 10131
    CONSUMER_CREATE_DURABLE_AND_NAME_MISMATCH = 10132
    REPLICAS_COUNT_CANNOT_BE_NEGATIVE = 10133
    CONSUMER_REPLICAS_SHOULD_MATCH_STREAM = 10134
    CONSUMER_METADATA_LENGTH = 10135
    CONSUMER_DUPLICATE_FILTER_SUBJECTS = 10136
    CONSUMER_MULTIPLE_FILTERS_NOT_ALLOWED = 10137
    CONSUMER_OVERLAPPING_SUBJECT_FILTERS = 10138
    CONSUMER_EMPTY_FILTER = 10139
    SOURCE_DUPLICATE_DETECTED = 10140
    SOURCE_INVALID_STREAM_NAME = 10141
    MIRROR_INVALID_STREAM_NAME = 10142
    MIRROR_WITH_FIRST_SEQ = 10143
    SOURCE_MULTIPLE_FILTERS_NOT_ALLOWED = 10144
    SOURCE_INVALID_SUBJECT_FILTER = 10145
    SOURCE_INVALID_TRANSFORM_DESTINATION = 10146
    SOURCE_OVERLAPPING_SUBJECT_FILTERS = 10147
    CONSUMER_ALREADY_EXISTS = 10148
    CONSUMER_DOES_NOT_EXIST = 10149
    MIRROR_MULTIPLE_FILTERS_NOT_ALLOWED = 10150
    MIRROR_INVALID_SUBJECT_FILTER = 10151
    MIRROR_OVERLAPPING_SUBJECT_FILTERS = 10152
    CONSUMER_INACTIVE_THRESHOLD_EXCESS = 10153
    MIRROR_INVALID_TRANSFORM_DESTINATION = 10154
    STREAM_TRANSFORM_INVALID_SOURCE = 10155
    STREAM_TRANSFORM_INVALID_DESTINATION = 10156
    PEDANTIC = 10157
    STREAM_DUPLICATE_MESSAGE_CONFLICT = 10158
    CONSUMER_PRIORITY_POLICY_WITHOUT_GROUP = 10159
    CONSUMER_INVALID_PRIORITY_GROUP = 10160
    CONSUMER_EMPTY_GROUP_NAME = 10161
    CONSUMER_INVALID_GROUP_NAME = 10162
    STREAM_EXPECTED_LAST_SEQ_PER_SUBJECT_NOT_READY = 10163
    STREAM_WRONG_LAST_SEQUENCE_CONSTANT = 10164
    MESSAGE_TTL_INVALID = 10165
    MESSAGE_TTL_DISABLED = 10166
    STREAM_TOO_MANY_REQUESTS = 10167
    MESSAGE_INCR_DISABLED = 10168
    MESSAGE_INCR_MISSING = 10169
    MESSAGE_INCR_PAYLOAD = 10170
    MESSAGE_INCR_INVALID = 10171
    MESSAGE_COUNTER_BROKEN = 10172
    MIRROR_WITH_COUNTERS = 10173
    ATOMIC_PUBLISH_DISABLED = 10174
    ATOMIC_PUBLISH_MISSING_SEQ = 10175
    ATOMIC_PUBLISH_INCOMPLETE_BATCH = 10176
    ATOMIC_PUBLISH_UNSUPPORTED_HEADER_BATCH = 10177
    CONSUMER_PUSH_WITH_PRIORITY_GROUP = 10178
    ATOMIC_PUBLISH_INVALID_BATCH_ID = 10179
    STREAM_MIN_LAST_SEQ = 10180
    CONSUMER_ACK_POLICY_INVALID = 10181
    CONSUMER_REPLAY_POLICY_INVALID = 10182
    CONSUMER_ACK_WAIT_NEGATIVE = 10183
    CONSUMER_BACK_OFF_NEGATIVE = 10184
    REQUIRED_API_LEVEL = 10185
    MIRROR_WITH_MSG_SCHEDULES = 10186
    SOURCE_WITH_MSG_SCHEDULES = 10187
    MESSAGE_SCHEDULES_DISABLED = 10188
    MESSAGE_SCHEDULES_PATTERN_INVALID = 10189
    MESSAGE_SCHEDULES_TARGET_INVALID = 10190
    MESSAGE_SCHEDULES_TTL_INVALID = 10191
    MESSAGE_SCHEDULES_ROLLUP_INVALID = 10192
    STREAM_EXPECTED_LAST_SEQ_PER_SUBJECT_INVALID = 10193
    STREAM_OFFLINE_REASON = 10194
    CONSUMER_OFFLINE_REASON = 10195
    CONSUMER_PRIORITY_GROUP_WITH_POLICY_NONE = 10196
    CONSUMER_PINNED_TTL_WITHOUT_PRIORITY_POLICY_NONE = 10197
    MIRROR_WITH_ATOMIC_PUBLISH = 10198
    ATOMIC_PUBLISH_TOO_LARGE_BATCH = 10199
    ATOMIC_PUBLISH_INVALID_BATCH_COMMIT = 10200
    ATOMIC_PUBLISH_CONTAINS_DUPLICATE_MESSAGE = 10201
    CLUSTER_SERVER_MEMBER_CHANGE_INFLIGHT = 10202
    MESSAGE_SCHEDULES_SOURCE_INVALID = 10203
    CONSUMER_INVALID_RESET = 10204
    BATCH_PUBLISH_DISABLED = 10205
    BATCH_PUBLISH_INVALID_PATTERN = 10206
    BATCH_PUBLISH_INVALID_BATCH_ID = 10207
    BATCH_PUBLISH_UNKNOWN_BATCH_ID = 10208
    MIRROR_WITH_BATCH_PUBLISH = 10209
    ATOMIC_PUBLISH_TOO_MANY_INFLIGHT = 10210
    BATCH_PUBLISH_TOO_MANY_INFLIGHT = 10211
    MESSAGE_SCHEDULES_SCHEDULER_INVALID = 10212
    MIRROR_DURABLE_CONSUMER_CFG_INVALID = 10213
    MIRROR_CONSUMER_REQUIRES_ACK_FC = 10214
    SOURCE_DURABLE_CONSUMER_CFG_INVALID = 10215
    SOURCE_DURABLE_CONSUMER_DUPLICATE_DETECTED = 10216
    SOURCE_CONSUMER_REQUIRES_ACK_FC = 10217
    CONSUMER_ACK_FC_REQUIRES_PUSH = 10218
    CONSUMER_ACK_FC_REQUIRES_FC = 10219
    CONSUMER_ACK_FC_REQUIRES_MAX_ACK_PENDING = 10220
    CONSUMER_ACK_FC_REQUIRES_NO_ACK_WAIT = 10221
    CONSUMER_ACK_FC_REQUIRES_NO_MAX_DELIVER = 10222
    MESSAGE_SCHEDULES_TIME_ZONE_INVALID = 10223
    CLUSTER_RESCUE = 10224
    CONSUMER_STREAM_IDENTITY_MISMATCH = 10225
    STREAM_RECONFIGURE_IN_PROGRESS = 10226
    MESSAGE_SOURCE_HDR_NOT_ALLOWED = 10227


# --------------------------------------------------------------------------------------------
# One factory per table entry
# --------------------------------------------------------------------------------------------


def account_resources_exceeded() -> ApiError:
    """400/10002 resource limits exceeded for account"""
    return make(10002)


def bad_request() -> ApiError:
    """400/10003 bad request"""
    return make(10003)


def cluster_incomplete() -> ApiError:
    """503/10004 incomplete results"""
    return make(10004)


def cluster_no_peers(err) -> ApiError:
    """400/10005 {err}"""
    return make(10005, err=err)


def cluster_not_active() -> ApiError:
    """500/10006 JetStream not in clustered mode"""
    return make(10006)


def cluster_not_assigned() -> ApiError:
    """500/10007 JetStream cluster not assigned to this server"""
    return make(10007)


def cluster_not_avail() -> ApiError:
    """503/10008 JetStream system temporarily unavailable"""
    return make(10008)


def cluster_not_leader() -> ApiError:
    """500/10009 JetStream cluster can not handle request"""
    return make(10009)


def cluster_required() -> ApiError:
    """503/10010 JetStream clustering support required"""
    return make(10010)


def cluster_tags() -> ApiError:
    """400/10011 tags placement not supported for operation"""
    return make(10011)


def consumer_create(err) -> ApiError:
    """500/10012 {err}"""
    return make(10012, err=err)


def consumer_name_exist() -> ApiError:
    """400/10013 consumer name already in use"""
    return make(10013)


def consumer_not_found() -> ApiError:
    """404/10014 consumer not found"""
    return make(10014)


def snapshot_deliver_subject_invalid() -> ApiError:
    """400/10015 deliver subject not valid"""
    return make(10015)


def consumer_durable_name_not_in_subject() -> ApiError:
    """400/10016 consumer expected to be durable but no durable name set in subject"""
    return make(10016)


def consumer_durable_name_not_match_subject() -> ApiError:
    """400/10017 consumer name in subject does not match durable name in request"""
    return make(10017)


def consumer_durable_name_not_set() -> ApiError:
    """400/10018 consumer expected to be durable but a durable name was not set"""
    return make(10018)


def consumer_ephemeral_with_durable_in_subject() -> ApiError:
    """400/10019 consumer expected to be ephemeral but detected a durable name set in subject"""
    return make(10019)


def consumer_ephemeral_with_durable_name() -> ApiError:
    """400/10020 consumer expected to be ephemeral but a durable name was set in request"""
    return make(10020)


def stream_external_api_overlap(prefix, subject) -> ApiError:
    """400/10021 stream external api prefix {prefix} must not overlap with {subject}"""
    return make(10021, prefix=prefix, subject=subject)


def stream_external_del_prefix_overlaps(prefix, subject) -> ApiError:
    """400/10022 stream external delivery prefix {prefix} overlaps with stream subject {subject}"""
    return make(10022, prefix=prefix, subject=subject)


def insufficient_resources() -> ApiError:
    """503/10023 insufficient resources"""
    return make(10023)


def stream_invalid_external_delivery_subj(prefix) -> ApiError:
    """400/10024 stream external delivery prefix {prefix} must not contain wildcards"""
    return make(10024, prefix=prefix)


def invalid_json(err) -> ApiError:
    """400/10025 invalid JSON: {err}"""
    return make(10025, err=err)


def maximum_consumers_limit() -> ApiError:
    """400/10026 maximum consumers limit reached"""
    return make(10026)


def maximum_streams_limit() -> ApiError:
    """400/10027 maximum number of streams reached"""
    return make(10027)


def memory_resources_exceeded() -> ApiError:
    """500/10028 insufficient memory resources available"""
    return make(10028)


def mirror_consumer_setup_failed(err) -> ApiError:
    """500/10029 {err}"""
    return make(10029, err=err)


def mirror_max_message_size_too_big() -> ApiError:
    """400/10030 stream mirror must have max message size >= source"""
    return make(10030)


def mirror_with_sources() -> ApiError:
    """400/10031 stream mirrors can not also contain other sources"""
    return make(10031)


def mirror_with_start_seq_and_time() -> ApiError:
    """400/10032 stream mirrors can not have both start seq and start time configured"""
    return make(10032)


def mirror_with_subject_filters() -> ApiError:
    """400/10033 stream mirrors can not contain filtered subjects"""
    return make(10033)


def mirror_with_subjects() -> ApiError:
    """400/10034 stream mirrors can not contain subjects"""
    return make(10034)


def no_account() -> ApiError:
    """503/10035 account not found"""
    return make(10035)


def cluster_un_support_feature() -> ApiError:
    """503/10036 not currently supported in clustered mode"""
    return make(10036)


def no_message_found() -> ApiError:
    """404/10037 no message found"""
    return make(10037)


def not_empty_request() -> ApiError:
    """400/10038 expected an empty request payload"""
    return make(10038)


def not_enabled_for_account() -> ApiError:
    """503/10039 JetStream not enabled for account"""
    return make(10039)


def cluster_peer_not_member() -> ApiError:
    """400/10040 peer not a member"""
    return make(10040)


def raft_general(err) -> ApiError:
    """500/10041 {err}"""
    return make(10041, err=err)


def restore_subscribe_failed(subject, err) -> ApiError:
    """500/10042 JetStream unable to subscribe to restore snapshot {subject}: {err}"""
    return make(10042, subject=subject, err=err)


def sequence_not_found(seq) -> ApiError:
    """400/10043 sequence {seq} not found"""
    return make(10043, seq=seq)


def cluster_server_not_member() -> ApiError:
    """400/10044 server is not a member of the cluster"""
    return make(10044)


def source_consumer_setup_failed(err) -> ApiError:
    """500/10045 {err}"""
    return make(10045, err=err)


def source_max_message_size_too_big() -> ApiError:
    """400/10046 stream source must have max message size >= target"""
    return make(10046)


def storage_resources_exceeded() -> ApiError:
    """500/10047 insufficient storage resources available"""
    return make(10047)


def stream_assignment(err) -> ApiError:
    """500/10048 {err}"""
    return make(10048, err=err)


def stream_create(err) -> ApiError:
    """500/10049 {err}"""
    return make(10049, err=err)


def stream_delete(err) -> ApiError:
    """500/10050 {err}"""
    return make(10050, err=err)


def stream_general(err) -> ApiError:
    """500/10051 {err}"""
    return make(10051, err=err)


def stream_invalid_config(err) -> ApiError:
    """500/10052 {err}"""
    return make(10052, err=err)


def stream_limits(err) -> ApiError:
    """500/10053 {err}"""
    return make(10053, err=err)


def stream_message_exceeds_maximum() -> ApiError:
    """400/10054 message size exceeds maximum allowed"""
    return make(10054)


def stream_mirror_not_updatable() -> ApiError:
    """400/10055 stream mirror configuration can not be updated"""
    return make(10055)


def stream_mismatch() -> ApiError:
    """400/10056 stream name in subject does not match request"""
    return make(10056)


def stream_msg_delete_failed(err) -> ApiError:
    """500/10057 {err}"""
    return make(10057, err=err)


def stream_name_exist() -> ApiError:
    """400/10058 stream name already in use with a different configuration"""
    return make(10058)


def stream_not_found() -> ApiError:
    """404/10059 stream not found"""
    return make(10059)


def stream_not_match() -> ApiError:
    """400/10060 expected stream does not match"""
    return make(10060)


def stream_replicas_not_updatable() -> ApiError:
    """400/10061 Replicas configuration can not be updated"""
    return make(10061)


def stream_restore(err) -> ApiError:
    """500/10062 restore failed: {err}"""
    return make(10062, err=err)


def stream_sequence_not_match() -> ApiError:
    """503/10063 expected stream sequence does not match"""
    return make(10063)


def stream_snapshot(err) -> ApiError:
    """500/10064 snapshot failed: {err}"""
    return make(10064, err=err)


def stream_subject_overlap() -> ApiError:
    """400/10065 subjects overlap with an existing stream"""
    return make(10065)


def stream_template_create(err) -> ApiError:
    """500/10066 {err}"""
    return make(10066, err=err)


def stream_template_delete(err) -> ApiError:
    """500/10067 {err}"""
    return make(10067, err=err)


def stream_template_not_found() -> ApiError:
    """404/10068 template not found"""
    return make(10068)


def stream_update(err) -> ApiError:
    """500/10069 {err}"""
    return make(10069, err=err)


def stream_wrong_last_msg_id(id) -> ApiError:
    """400/10070 wrong last msg ID: {id}"""
    return make(10070, id=id)


def stream_wrong_last_sequence(seq) -> ApiError:
    """400/10071 wrong last sequence: {seq}"""
    return make(10071, seq=seq)


def temp_storage_failed() -> ApiError:
    """500/10072 JetStream unable to open temp storage for restore"""
    return make(10072)


def template_name_not_match_subject() -> ApiError:
    """400/10073 template name in subject does not match request"""
    return make(10073)


def stream_replicas_not_supported() -> ApiError:
    """500/10074 replicas > 1 not supported in non-clustered mode"""
    return make(10074)


def peer_remap() -> ApiError:
    """503/10075 peer remap failed"""
    return make(10075)


def not_enabled() -> ApiError:
    """503/10076 JetStream not enabled"""
    return make(10076)


def stream_store_failed(err) -> ApiError:
    """503/10077 {err}"""
    return make(10077, err=err)


def consumer_config_required() -> ApiError:
    """400/10078 consumer config required"""
    return make(10078)


def consumer_deliver_to_wildcards() -> ApiError:
    """400/10079 consumer deliver subject has wildcards"""
    return make(10079)


def consumer_push_max_waiting() -> ApiError:
    """400/10080 consumer in push mode can not set max waiting"""
    return make(10080)


def consumer_deliver_cycle() -> ApiError:
    """400/10081 consumer deliver subject forms a cycle"""
    return make(10081)


def consumer_max_pending_ack_policy_required() -> ApiError:
    """400/10082 consumer requires ack policy for max ack pending"""
    return make(10082)


def consumer_small_heartbeat() -> ApiError:
    """400/10083 consumer idle heartbeat needs to be >= 100ms"""
    return make(10083)


def consumer_pull_requires_ack() -> ApiError:
    """400/10084 consumer in pull mode requires explicit ack policy on workqueue stream"""
    return make(10084)


def consumer_pull_not_durable() -> ApiError:
    """400/10085 consumer in pull mode requires a durable name"""
    return make(10085)


def consumer_pull_with_rate_limit() -> ApiError:
    """400/10086 consumer in pull mode can not have rate limit set"""
    return make(10086)


def consumer_max_waiting_negative() -> ApiError:
    """400/10087 consumer max waiting needs to be positive"""
    return make(10087)


def consumer_hb_requires_push() -> ApiError:
    """400/10088 consumer idle heartbeat requires a push based consumer"""
    return make(10088)


def consumer_fc_requires_push() -> ApiError:
    """400/10089 consumer flow control requires a push based consumer"""
    return make(10089)


def consumer_direct_requires_push() -> ApiError:
    """400/10090 consumer direct requires a push based consumer"""
    return make(10090)


def consumer_direct_requires_ephemeral() -> ApiError:
    """400/10091 consumer direct requires an ephemeral consumer"""
    return make(10091)


def consumer_on_mapped() -> ApiError:
    """400/10092 consumer direct on a mapped consumer"""
    return make(10092)


def consumer_filter_not_subset() -> ApiError:
    """400/10093 consumer filter subject is not a valid subset of the interest subjects"""
    return make(10093)


def consumer_invalid_policy(err) -> ApiError:
    """400/10094 {err}"""
    return make(10094, err=err)


def consumer_invalid_sampling(err) -> ApiError:
    """400/10095 failed to parse consumer sampling configuration: {err}"""
    return make(10095, err=err)


def stream_invalid() -> ApiError:
    """500/10096 stream not valid"""
    return make(10096)


def stream_header_exceeds_maximum() -> ApiError:
    """400/10097 header size exceeds maximum allowed of 64k"""
    return make(10097)


def consumer_wq_requires_explicit_ack() -> ApiError:
    """400/10098 workqueue stream requires explicit ack"""
    return make(10098)


def consumer_wq_multiple_unfiltered() -> ApiError:
    """400/10099 multiple non-filtered consumers not allowed on workqueue stream"""
    return make(10099)


def consumer_wq_consumer_not_unique() -> ApiError:
    """400/10100 filtered consumer not unique on workqueue stream"""
    return make(10100)


def consumer_wq_consumer_not_deliver_all() -> ApiError:
    """400/10101 consumer must be deliver all on workqueue stream"""
    return make(10101)


def consumer_name_too_long(max) -> ApiError:
    """400/10102 consumer name is too long, maximum allowed is {max}"""
    return make(10102, max=max)


def consumer_bad_durable_name() -> ApiError:
    """400/10103 durable name can not contain '.', '*', '>'"""
    return make(10103)


def consumer_store_failed(err) -> ApiError:
    """500/10104 error creating store for consumer: {err}"""
    return make(10104, err=err)


def consumer_existing_active() -> ApiError:
    """400/10105 consumer already exists and is still active"""
    return make(10105)


def consumer_replacement_with_different_name() -> ApiError:
    """400/10106 consumer replacement durable config not the same"""
    return make(10106)


def consumer_description_too_long(max) -> ApiError:
    """400/10107 consumer description is too long, maximum allowed is {max}"""
    return make(10107, max=max)


def consumer_with_flow_control_needs_heartbeats() -> ApiError:
    """400/10108 consumer with flow control also needs heartbeats"""
    return make(10108)


def stream_sealed() -> ApiError:
    """400/10109 invalid operation on sealed stream"""
    return make(10109)


def stream_purge_failed(err) -> ApiError:
    """500/10110 {err}"""
    return make(10110, err=err)


def stream_rollup_failed(err) -> ApiError:
    """500/10111 {err}"""
    return make(10111, err=err)


def consumer_invalid_deliver_subject() -> ApiError:
    """400/10112 invalid push consumer deliver subject"""
    return make(10112)


def stream_max_bytes_required() -> ApiError:
    """400/10113 account requires a stream config to have max bytes set"""
    return make(10113)


def consumer_max_request_batch_negative() -> ApiError:
    """400/10114 consumer max request batch needs to be > 0"""
    return make(10114)


def consumer_max_request_expires_too_small() -> ApiError:
    """400/10115 consumer max request expires needs to be >= 1ms"""
    return make(10115)


def consumer_max_deliver_backoff() -> ApiError:
    """400/10116 max deliver is required to be > length of backoff values"""
    return make(10116)


def stream_info_max_subjects() -> ApiError:
    """500/10117 subject details would exceed maximum allowed"""
    return make(10117)


def stream_offline() -> ApiError:
    """500/10118 stream is offline"""
    return make(10118)


def consumer_offline() -> ApiError:
    """500/10119 consumer is offline"""
    return make(10119)


def no_limits() -> ApiError:
    """400/10120 no JetStream default or applicable tiered limit present"""
    return make(10120)


def consumer_max_pending_ack_excess(limit) -> ApiError:
    """400/10121 consumer max ack pending exceeds system limit of {limit}"""
    return make(10121, limit=limit)


def stream_max_stream_bytes_exceeded() -> ApiError:
    """400/10122 stream max bytes exceeds account limit max stream bytes"""
    return make(10122)


def stream_move_and_scale() -> ApiError:
    """400/10123 can not move and scale a stream in a single update"""
    return make(10123)


def stream_move_in_progress() -> ApiError:
    """400/10124 stream move already in progress"""
    return make(10124)


def consumer_max_request_batch_exceeded(limit) -> ApiError:
    """400/10125 consumer max request batch exceeds server limit of {limit}"""
    return make(10125, limit=limit)


def consumer_replicas_exceeds_stream() -> ApiError:
    """400/10126 consumer config replica count exceeds parent stream"""
    return make(10126)


def consumer_name_contains_path_separators() -> ApiError:
    """400/10127 Consumer name can not contain path separators"""
    return make(10127)


def stream_name_contains_path_separators() -> ApiError:
    """400/10128 Stream name can not contain path separators"""
    return make(10128)


def stream_reconfigure_not_in_progress() -> ApiError:
    """400/10129 stream reconfiguration not in progress"""
    return make(10129)


def stream_name_exist_restore_failed() -> ApiError:
    """400/10130 stream name already in use, cannot restore"""
    return make(10130)


def consumer_create_filter_subject_mismatch() -> ApiError:
    """400/10131 Consumer create request did not match filtered subject from create subject"""
    return make(10131)


def consumer_create_durable_and_name_mismatch() -> ApiError:
    """400/10132 Consumer Durable and Name have to be equal if both are provided"""
    return make(10132)


def replicas_count_cannot_be_negative() -> ApiError:
    """400/10133 replicas count cannot be negative"""
    return make(10133)


def consumer_replicas_should_match_stream() -> ApiError:
    """400/10134 consumer config replicas must match interest retention stream's replicas"""
    return make(10134)


def consumer_metadata_length(limit) -> ApiError:
    """400/10135 consumer metadata exceeds maximum size of {limit}"""
    return make(10135, limit=limit)


def consumer_duplicate_filter_subjects() -> ApiError:
    """400/10136 consumer cannot have both FilterSubject and FilterSubjects specified"""
    return make(10136)


def consumer_multiple_filters_not_allowed() -> ApiError:
    """400/10137 consumer with multiple subject filters cannot use subject based API"""
    return make(10137)


def consumer_overlapping_subject_filters() -> ApiError:
    """400/10138 consumer subject filters cannot overlap"""
    return make(10138)


def consumer_empty_filter() -> ApiError:
    """400/10139 consumer filter in FilterSubjects cannot be empty"""
    return make(10139)


def source_duplicate_detected() -> ApiError:
    """400/10140 duplicate source configuration detected"""
    return make(10140)


def source_invalid_stream_name() -> ApiError:
    """400/10141 sourced stream name is invalid"""
    return make(10141)


def mirror_invalid_stream_name() -> ApiError:
    """400/10142 mirrored stream name is invalid"""
    return make(10142)


def mirror_with_first_seq() -> ApiError:
    """400/10143 stream mirrors can not have first sequence configured"""
    return make(10143)


def source_multiple_filters_not_allowed() -> ApiError:
    """400/10144 source with multiple subject transforms cannot also have a single subject filter"""
    return make(10144)


def source_invalid_subject_filter(err) -> ApiError:
    """400/10145 source transform source: {err}"""
    return make(10145, err=err)


def source_invalid_transform_destination(err) -> ApiError:
    """400/10146 source transform: {err}"""
    return make(10146, err=err)


def source_overlapping_subject_filters() -> ApiError:
    """400/10147 source filters can not overlap"""
    return make(10147)


def consumer_already_exists() -> ApiError:
    """400/10148 consumer already exists"""
    return make(10148)


def consumer_does_not_exist() -> ApiError:
    """400/10149 consumer does not exist"""
    return make(10149)


def mirror_multiple_filters_not_allowed() -> ApiError:
    """400/10150 mirror with multiple subject transforms cannot also have a single subject filter"""
    return make(10150)


def mirror_invalid_subject_filter(err) -> ApiError:
    """400/10151 mirror transform source: {err}"""
    return make(10151, err=err)


def mirror_overlapping_subject_filters() -> ApiError:
    """400/10152 mirror subject filters can not overlap"""
    return make(10152)


def consumer_inactive_threshold_excess(limit) -> ApiError:
    """400/10153 consumer inactive threshold exceeds system limit of {limit}"""
    return make(10153, limit=limit)


def mirror_invalid_transform_destination(err) -> ApiError:
    """400/10154 mirror transform: {err}"""
    return make(10154, err=err)


def stream_transform_invalid_source(err) -> ApiError:
    """400/10155 stream transform source: {err}"""
    return make(10155, err=err)


def stream_transform_invalid_destination(err) -> ApiError:
    """400/10156 stream transform: {err}"""
    return make(10156, err=err)


def pedantic(err) -> ApiError:
    """400/10157 pedantic mode: {err}"""
    return make(10157, err=err)


def stream_duplicate_message_conflict() -> ApiError:
    """409/10158 duplicate message id is in process"""
    return make(10158)


def consumer_priority_policy_without_group() -> ApiError:
    """400/10159 Setting PriorityPolicy requires at least one PriorityGroup to be set"""
    return make(10159)


def consumer_invalid_priority_group() -> ApiError:
    """400/10160 Provided priority group does not exist for this consumer"""
    return make(10160)


def consumer_empty_group_name() -> ApiError:
    """400/10161 Group name cannot be an empty string"""
    return make(10161)


def consumer_invalid_group_name() -> ApiError:
    """400/10162 Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 characters"""
    return make(10162)


def stream_expected_last_seq_per_subject_not_ready() -> ApiError:
    """503/10163 expected last sequence per subject temporarily unavailable"""
    return make(10163)


def stream_wrong_last_sequence_constant() -> ApiError:
    """400/10164 wrong last sequence"""
    return make(10164)


def message_ttl_invalid() -> ApiError:
    """400/10165 invalid per-message TTL"""
    return make(10165)


def message_ttl_disabled() -> ApiError:
    """400/10166 per-message TTL is disabled"""
    return make(10166)


def stream_too_many_requests() -> ApiError:
    """429/10167 too many requests"""
    return make(10167)


def message_incr_disabled() -> ApiError:
    """400/10168 message counters is disabled"""
    return make(10168)


def message_incr_missing() -> ApiError:
    """400/10169 message counter increment is missing"""
    return make(10169)


def message_incr_payload() -> ApiError:
    """400/10170 message counter has payload"""
    return make(10170)


def message_incr_invalid() -> ApiError:
    """400/10171 message counter increment is invalid"""
    return make(10171)


def message_counter_broken() -> ApiError:
    """400/10172 message counter is broken"""
    return make(10172)


def mirror_with_counters() -> ApiError:
    """400/10173 stream mirrors can not also calculate counters"""
    return make(10173)


def atomic_publish_disabled() -> ApiError:
    """400/10174 atomic publish is disabled"""
    return make(10174)


def atomic_publish_missing_seq() -> ApiError:
    """400/10175 atomic publish sequence is missing"""
    return make(10175)


def atomic_publish_incomplete_batch() -> ApiError:
    """400/10176 atomic publish batch is incomplete"""
    return make(10176)


def atomic_publish_unsupported_header_batch(header) -> ApiError:
    """400/10177 atomic publish unsupported header used: {header}"""
    return make(10177, header=header)


def consumer_push_with_priority_group() -> ApiError:
    """400/10178 priority groups can not be used with push consumers"""
    return make(10178)


def atomic_publish_invalid_batch_id() -> ApiError:
    """400/10179 atomic publish batch ID is invalid"""
    return make(10179)


def stream_min_last_seq() -> ApiError:
    """412/10180 min last sequence"""
    return make(10180)


def consumer_ack_policy_invalid() -> ApiError:
    """400/10181 consumer ack policy invalid"""
    return make(10181)


def consumer_replay_policy_invalid() -> ApiError:
    """400/10182 consumer replay policy invalid"""
    return make(10182)


def consumer_ack_wait_negative() -> ApiError:
    """400/10183 consumer ack wait needs to be positive"""
    return make(10183)


def consumer_back_off_negative() -> ApiError:
    """400/10184 consumer backoff needs to be positive"""
    return make(10184)


def required_api_level() -> ApiError:
    """412/10185 JetStream minimum api level required"""
    return make(10185)


def mirror_with_msg_schedules() -> ApiError:
    """400/10186 stream mirrors can not also schedule messages"""
    return make(10186)


def source_with_msg_schedules() -> ApiError:
    """400/10187 stream source can not also schedule messages"""
    return make(10187)


def message_schedules_disabled() -> ApiError:
    """400/10188 message schedules is disabled"""
    return make(10188)


def message_schedules_pattern_invalid() -> ApiError:
    """400/10189 message schedules pattern is invalid"""
    return make(10189)


def message_schedules_target_invalid() -> ApiError:
    """400/10190 message schedules target is invalid"""
    return make(10190)


def message_schedules_ttl_invalid() -> ApiError:
    """400/10191 message schedules invalid per-message TTL"""
    return make(10191)


def message_schedules_rollup_invalid() -> ApiError:
    """400/10192 message schedules invalid rollup"""
    return make(10192)


def stream_expected_last_seq_per_subject_invalid() -> ApiError:
    """400/10193 missing sequence for expected last sequence per subject"""
    return make(10193)


def stream_offline_reason(err) -> ApiError:
    """500/10194 stream is offline: {err}"""
    return make(10194, err=err)


def consumer_offline_reason(err) -> ApiError:
    """500/10195 consumer is offline: {err}"""
    return make(10195, err=err)


def consumer_priority_group_with_policy_none() -> ApiError:
    """400/10196 consumer can not have priority groups when policy is none"""
    return make(10196)


def consumer_pinned_ttl_without_priority_policy_none() -> ApiError:
    """400/10197 PinnedTTL cannot be set when PriorityPolicy is none"""
    return make(10197)


def mirror_with_atomic_publish() -> ApiError:
    """400/10198 stream mirrors can not also use atomic publishing"""
    return make(10198)


def atomic_publish_too_large_batch(size) -> ApiError:
    """400/10199 atomic publish batch is too large: {size}"""
    return make(10199, size=size)


def atomic_publish_invalid_batch_commit() -> ApiError:
    """400/10200 atomic publish batch commit is invalid"""
    return make(10200)


def atomic_publish_contains_duplicate_message() -> ApiError:
    """400/10201 atomic publish batch contains duplicate message id"""
    return make(10201)


def cluster_server_member_change_inflight() -> ApiError:
    """400/10202 cluster member change is in progress"""
    return make(10202)


def message_schedules_source_invalid() -> ApiError:
    """400/10203 message schedules source is invalid"""
    return make(10203)


def consumer_invalid_reset(err) -> ApiError:
    """400/10204 invalid reset: {err}"""
    return make(10204, err=err)


def batch_publish_disabled() -> ApiError:
    """400/10205 batch publish is disabled"""
    return make(10205)


def batch_publish_invalid_pattern() -> ApiError:
    """400/10206 batch publish pattern is invalid"""
    return make(10206)


def batch_publish_invalid_batch_id() -> ApiError:
    """400/10207 batch publish ID is invalid"""
    return make(10207)


def batch_publish_unknown_batch_id() -> ApiError:
    """400/10208 batch publish ID unknown"""
    return make(10208)


def mirror_with_batch_publish() -> ApiError:
    """400/10209 stream mirrors can not also use batch publishing"""
    return make(10209)


def atomic_publish_too_many_inflight() -> ApiError:
    """429/10210 atomic publish too many inflight"""
    return make(10210)


def batch_publish_too_many_inflight() -> ApiError:
    """429/10211 batch publish too many inflight"""
    return make(10211)


def message_schedules_scheduler_invalid() -> ApiError:
    """400/10212 message schedules invalid scheduler"""
    return make(10212)


def mirror_durable_consumer_cfg_invalid() -> ApiError:
    """400/10213 stream mirror consumer config is invalid"""
    return make(10213)


def mirror_consumer_requires_ack_fc() -> ApiError:
    """400/10214 stream mirror consumer requires flow control ack policy"""
    return make(10214)


def source_durable_consumer_cfg_invalid() -> ApiError:
    """400/10215 stream source consumer config is invalid"""
    return make(10215)


def source_durable_consumer_duplicate_detected() -> ApiError:
    """400/10216 duplicate stream source consumer detected"""
    return make(10216)


def source_consumer_requires_ack_fc() -> ApiError:
    """400/10217 stream source consumer requires flow control ack policy"""
    return make(10217)


def consumer_ack_fc_requires_push() -> ApiError:
    """400/10218 flow control ack policy requires a push based consumer"""
    return make(10218)


def consumer_ack_fc_requires_fc() -> ApiError:
    """400/10219 flow control ack policy requires flow control"""
    return make(10219)


def consumer_ack_fc_requires_max_ack_pending() -> ApiError:
    """400/10220 flow control ack policy requires max ack pending"""
    return make(10220)


def consumer_ack_fc_requires_no_ack_wait() -> ApiError:
    """400/10221 flow control ack policy requires unset ack wait"""
    return make(10221)


def consumer_ack_fc_requires_no_max_deliver() -> ApiError:
    """400/10222 flow control ack policy requires unset max deliver"""
    return make(10222)


def message_schedules_time_zone_invalid() -> ApiError:
    """400/10223 message schedules time zone is invalid"""
    return make(10223)


def cluster_rescue(err) -> ApiError:
    """400/10224 JetStream system rescue not applied: {err}"""
    return make(10224, err=err)


def consumer_stream_identity_mismatch(msg) -> ApiError:
    """400/10225 consumer's stream identity does not match: {msg}"""
    return make(10225, msg=msg)


def stream_reconfigure_in_progress() -> ApiError:
    """400/10226 stream reconfiguration already in progress"""
    return make(10226)


def message_source_hdr_not_allowed() -> ApiError:
    """400/10227 message stream source header is not allowed"""
    return make(10227)


# --------------------------------------------------------------------------------------------
# Aliases and concrete texts produced through the "{err}" templates (verified on v2.15.1)
# --------------------------------------------------------------------------------------------


def stream_config_invalid(detail: str) -> ApiError:
    """500/10052 with a validation text, e.g. ``max age needs to be >= 100ms``."""
    return stream_invalid_config(detail)


def pedantic_error(detail: str) -> ApiError:
    """400/10157 ``pedantic mode: <detail>``."""
    return pedantic(detail)


def wrong_last_sequence(seq: int) -> ApiError:
    """400/10071 ``wrong last sequence: N`` (pub ack)."""
    return stream_wrong_last_sequence(seq)


def wrong_last_msg_id(msg_id: str) -> ApiError:
    """400/10070 ``wrong last msg ID: X`` (pub ack; X may be empty)."""
    return stream_wrong_last_msg_id(msg_id)


def expected_stream_mismatch() -> ApiError:
    """400/10060 ``expected stream does not match`` (pub ack)."""
    return stream_not_match()


def message_size_exceeds_maximum() -> ApiError:
    """400/10054 ``message size exceeds maximum allowed`` (pub ack)."""
    return stream_message_exceeds_maximum()


def max_msgs_exceeded() -> ApiError:
    """503/10077 ``maximum messages exceeded`` (discard new, pub ack)."""
    return stream_store_failed("maximum messages exceeded")


def max_bytes_exceeded() -> ApiError:
    """503/10077 ``maximum bytes exceeded`` (discard new, pub ack)."""
    return stream_store_failed("maximum bytes exceeded")


def max_msgs_per_subject_exceeded() -> ApiError:
    """503/10077 ``maximum messages per subject exceeded`` (discard_new_per_subject, pub ack)."""
    return stream_store_failed("maximum messages per subject exceeded")


def message_too_large() -> ApiError:
    """503/10077 ``message too large`` (store record limit, pub ack)."""
    return stream_store_failed("message too large")


def rollup_not_permitted() -> ApiError:
    """500/10111 ``rollup not permitted`` (no allow_rollup_hdrs, or deny_purge)."""
    return stream_rollup_failed("rollup not permitted")


def rollup_value_invalid(value: str) -> ApiError:
    """500/10111 ``rollup value invalid: "<value>"`` (Go ``%q`` quoting)."""
    return stream_rollup_failed(f"rollup value invalid: {go_quote(value)}")


def message_delete_not_permitted() -> ApiError:
    """500/10057 ``message delete not permitted`` (deny_delete)."""
    return stream_msg_delete_failed("message delete not permitted")


def purge_not_permitted() -> ApiError:
    """500/10110 ``stream purge not permitted`` (deny_purge)."""
    return stream_purge_failed("stream purge not permitted")


def consumer_limits_violation(names: list[str]) -> ApiError:
    """500/10069 ``change to limits violates consumers: a, b`` (stream update)."""
    return stream_update("change to limits violates consumers: " + ", ".join(names))


def ttl_invalid() -> ApiError:
    """400/10165 ``invalid per-message TTL``."""
    return message_ttl_invalid()


def ttl_disabled() -> ApiError:
    """400/10166 ``per-message TTL is disabled``."""
    return message_ttl_disabled()


def unsupported_feature(feature: str) -> ApiError:
    """500/10052 for a StreamConfig option minijs deliberately does not implement.

    The real server would accept (or validate) the option; minijs must never silently accept it,
    so it answers with the generic invalid-config error and a description naming the option.
    """
    return stream_invalid_config(f"minijs does not support {feature}")
