/* What a device is, as its platform describes it: the geometry (clusters,
 * the cores of a cluster and their kinds, AICPU threads) and the memory.
 * Runtimes read the geometry as data; nothing above the platform assumes
 * a cluster shape. */
#ifndef SIMPLER_DEVICE_INFO_H
#define SIMPLER_DEVICE_INFO_H

#include <stdint.h>

/* Most cores one cluster has (the lanes a MIX task can run on together). */
#define SP_GEOMETRY_MAX_LANES 4

/* Cores are numbered lane 0 of every cluster first (core c is lane 0 of
 * cluster c), then the other lanes cluster by cluster: lane l >= 1 of
 * cluster c is core clusters + (lanes - 1) * c + (l - 1). On the a2a3
 * shape (lanes 3: AIC, AIV, AIV) that is AIC c = c, AIV = clusters + 2c + k. */
typedef struct sp_geometry {
    uint32_t clusters;
    uint32_t lanes;                            /* cores per cluster, <= SP_GEOMETRY_MAX_LANES */
    uint32_t lane_type[SP_GEOMETRY_MAX_LANES]; /* sp_core_type (simpler/kernel.h) of each lane */
    uint32_t aicpu_threads;                    /* threads a launch may run on */
} sp_geometry;

typedef struct sp_device_info {
    char platform[16]; /* the backend's name: "sim" */
    int32_t device_id;
    uint32_t core_count;      /* clusters * lanes */
    uint32_t core_queue;      /* payloads a core holds at once (>= 1) */
    uint32_t host_map;        /* 1 if host code can map device memory */
    uint32_t abandoned_cores; /* degraded: core threads given up on after a timeout */
    uint32_t open_devices;    /* devices open in this process now */
    sp_geometry geometry;
    uint64_t memory_bytes;    /* device memory arena */
    uint64_t committed_bytes; /* in live allocations */
} sp_device_info;

#endif
