"""Kubernetes v1.33's feature gates for the control-plane components' `--feature-gates` flag: known gates are
accepted (and logged), anything else is refused with kube's own messages (`unrecognized feature gate: X`).

The table holds the gates `kube-apiserver --help` lists for v1.33 (alpha and beta; the generic apiserver's and
component-base's included) and GA gates still settable in v1.33. Setting a gate changes nothing else here (the
components implement the v1.33 default behaviour), except where a component reads it: the API server's
TranslateStreamCloseWebsocketRequests and PortForwardWebsockets (pods/exec, attach, portforward).
"""

from __future__ import annotations

__all__ = ["KNOWN_GATES", "FeatureGateError", "click_feature_gates", "parse_feature_gates"]

_ALPHA = (
    "AllAlpha AllowParsingUserUIDFromCertAuth AllowUnsafeMalformedObjectDeletion CBORServingAndStorage "
    "CPUManagerPolicyAlphaOptions CSIVolumeHealth ClientsAllowCBOR ClientsPreferCBOR CloudControllerManagerWebhook "
    "ClusterTrustBundle ClusterTrustBundleProjection ComponentFlagz ComponentStatusz ContainerStopSignals "
    "CoordinatedLeaderElection CrossNamespaceVolumeDataSource CustomCPUCFSQuotaPeriod DRAAdminAccess "
    "DRADeviceTaints DRAPartitionableDevices DRAPrioritizedList DRAResourceClaimDeviceStatus "
    "DeclarativeValidationTakeover DisableAllocatorDualWrite EventedPLEG ExternalServiceAccountTokenSigner "
    "HPAConfigurableTolerance HPAScaleToZero ImageVolume InPlacePodVerticalScalingAllocatedStatus "
    "InPlacePodVerticalScalingExclusiveCPUs InTreePluginPortworxUnregister InformerResourceVersion "
    "KubeletCrashLoopBackOffMax KubeletFineGrainedAuthz KubeletInUserNamespace KubeletPSI "
    "KubeletPodResourcesDynamicResources KubeletPodResourcesGet KubeletServiceAccountTokenForCredentialProviders "
    "ListFromCacheSnapshot LoggingAlphaOptions MaxUnavailableStatefulSet MemoryQoS MutatingAdmissionPolicy "
    "NominatedNodeNameForExpectation PodAndContainerStatsFromCRI PodCertificateRequest PodLevelResources "
    "PodLifecycleSleepActionAllowZero PodLogsQuerySplitStreams PodObservedGenerationTracking "
    "PodTopologyLabelsAdmission PreferSameTrafficDistribution ProcMountType QOSReserved RelaxedDNSSearchValidation "
    "RemoteRequestHeaderUID ResourceHealthStatus RuntimeClassInImageCriApi SELinuxChangePolicy SELinuxMount "
    "SchedulerAsyncPreemption StorageCapacityScoring StorageVersionAPI StorageVersionMigrator "
    "SupplementalGroupsPolicy TopologyManagerPolicyAlphaOptions UnknownVersionInteroperabilityProxy "
    "UserNamespacesPodSecurityStandards VolumeCapacityPriority WinDSR WindowsCPUAndMemoryAffinity "
    "WindowsGracefulNodeShutdown WindowsHostNetwork"
)
_BETA = (
    "APIResponseCompression APIServerIdentity APIServerTracing APIServingWithRoutine AllBeta "
    "AnonymousAuthConfigurableEndpoints AnyVolumeDataSource AuthorizeNodeWithSelectors AuthorizeWithSelectors "
    "BtreeWatchCache CPUManagerPolicyBetaOptions CPUManagerPolicyOptions CSIMigrationPortworx "
    "ConcurrentWatchObjectDecode ConsistentListFromCache ContainerCheckpoint ContextualLogging "
    "DeclarativeValidation DynamicResourceAllocation GracefulNodeShutdown GracefulNodeShutdownBasedOnPodPriority "
    "HonorPVReclaimPolicy ImageMaximumGCAge InPlacePodVerticalScaling JobManagedBy KubeletCgroupDriverFromCRI "
    "KubeletPodResourcesGetAllocatable KubeletSeparateDiskGC KubeletTracing "
    "LocalStorageCapacityIsolationFSQuotaMonitoring LoggingBetaOptions MatchLabelKeysInPodAffinity "
    "MatchLabelKeysInPodTopologySpread MultiCIDRServiceAllocator NodeLogQuery NodeSwap OpenAPIEnums "
    "OrderedNamespaceDeletion PodDeletionCost PodLifecycleSleepAction PodReadyToStartContainersCondition "
    "PortForwardWebsockets RecoverVolumeExpansionFailure RelaxedEnvironmentVariableValidation "
    "ReloadKubeletServerCertificateFile ResilientWatchCacheInitialization RotateKubeletServerCertificate "
    "SELinuxMountReadWriteOncePod SchedulerPopFromBackoffQ SchedulerQueueingHints SeparateCacheWatchRPC "
    "StorageNamespaceIndex StreamingCollectionEncodingToJSON StreamingCollectionEncodingToProtobuf "
    "SystemdWatchdog TopologyManagerPolicyBetaOptions TranslateStreamCloseWebsocketRequests "
    "UnauthenticatedHTTP2DOSMitigation UserNamespacesSupport VolumeAttributesClass WatchCacheInitializationPostStartHook "
    "WatchFromStorageWithoutResourceVersion WatchList WatchListClient WinOverlay"
)
_GA = (
    "APISelfSubjectReview AggregatedDiscoveryRemoveBetaType ComponentSLIs CRDValidationRatcheting "
    "CustomResourceFieldSelectors JobBackoffLimitPerIndex JobPodReplacementPolicy JobSuccessPolicy NFTablesProxyMode "
    "NodeInclusionPolicyInPodTopologySpread RecursiveReadOnlyMounts RetryGenerateName SeparateTaintEvictionController "
    "ServiceAccountNodeAudienceRestriction ServiceAccountTokenNodeBinding ServiceTrafficDistribution SidecarContainers "
    "StrictCostEnforcementForVAP StrictCostEnforcementForWebhooks StructuredAuthenticationConfiguration "
    "StructuredAuthorizationConfiguration TopologyAwareHints"
)

#: gate → stage ("ALPHA", "BETA", "GA").
KNOWN_GATES: dict[str, str] = {
    **{n: "ALPHA" for n in _ALPHA.split()},
    **{n: "BETA" for n in _BETA.split()},
    **{n: "GA" for n in _GA.split()},
}


class FeatureGateError(ValueError):
    """A --feature-gates value kube would refuse; the message is kube's."""


def parse_feature_gates(value: str | None) -> dict[str, bool]:
    """`A=true,B=false` (optionally `kube:A=true`, the v1.33 apiserver's component-qualified form) → {A: True, ...}."""
    out: dict[str, bool] = {}
    for part in (value or "").split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, raw = part.partition("=")
        name = name.strip()
        if name.startswith("kube:"):
            name = name[len("kube:") :]
        if not sep:
            raise FeatureGateError(f"missing bool value for {name}")
        raw = raw.strip()
        if name not in KNOWN_GATES:
            raise FeatureGateError(f"unrecognized feature gate: {name}")
        if raw in ("1", "t", "T", "true", "TRUE", "True"):
            out[name] = True
        elif raw in ("0", "f", "F", "false", "FALSE", "False"):
            out[name] = False
        else:
            raise FeatureGateError(
                f'invalid value of {name}={raw}, err: strconv.ParseBool: parsing "{raw}": invalid syntax'
            )
    return out


def click_feature_gates(ctx: object, param: object, value: str | None) -> dict[str, bool]:
    """A click callback for a component's --feature-gates: the parsed gates, or kube's error as a usage error."""
    import click

    try:
        return parse_feature_gates(value)
    except FeatureGateError as e:
        raise click.BadParameter(str(e)) from None
