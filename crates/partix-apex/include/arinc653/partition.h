/*
 * ARINC 653 APEX -- partition management services (partix).
 *
 * A partition's main() runs in COLD_START (or WARM_START) mode: it creates its processes and
 * other resources, starts the processes, then calls SET_PARTITION_MODE(NORMAL). On success that
 * call does not return to main(): the main thread becomes the partition's idle thread and the
 * started processes are scheduled.
 */
#ifndef ARINC653_PARTITION_H
#define ARINC653_PARTITION_H

#include <arinc653/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * GET_PARTITION_STATUS: read the partition's status (a load from shared memory).
 *   NO_ERROR.
 */
extern void GET_PARTITION_STATUS (
    /*out*/ PARTITION_STATUS_TYPE *PARTITION_STATUS,
    /*out*/ RETURN_CODE_TYPE      *RETURN_CODE );

/*
 * SET_PARTITION_MODE: change the partition's operating mode.
 *   NO_ERROR       never seen by the caller: NORMAL makes the calling (main) thread the
 *                  partition's monitor thread; IDLE stops the partition; COLD_START and
 *                  WARM_START restart it (run by hand without `partix run`: IDLE exits with
 *                  status 0 and a restart re-executes the program);
 *   INVALID_PARAM  OPERATING_MODE is not an OPERATING_MODE_TYPE value;
 *   NO_ACTION      NORMAL requested while already NORMAL;
 *   INVALID_MODE   WARM_START requested from COLD_START.
 */
extern void SET_PARTITION_MODE (
    /*in */ OPERATING_MODE_TYPE OPERATING_MODE,
    /*out*/ RETURN_CODE_TYPE    *RETURN_CODE );

#ifdef __cplusplus
}
#endif

#endif /* ARINC653_PARTITION_H */
