/*
 * ARINC 653 APEX -- process management services (partix).
 *
 * Processes are threads of the partition's Linux process, scheduled by priority within the
 * partition's time windows.
 */
#ifndef ARINC653_PROCESS_H
#define ARINC653_PROCESS_H

#include <arinc653/types.h>

#ifdef __cplusplus
extern "C" {
#endif

extern void GET_PROCESS_ID (
    /*in */ APEX_NAME_PARAM   PROCESS_NAME,   /* PROCESS_NAME_TYPE */
    /*out*/ PROCESS_ID_TYPE   *PROCESS_ID,
    /*out*/ RETURN_CODE_TYPE  *RETURN_CODE );

extern void GET_PROCESS_STATUS (
    /*in */ PROCESS_ID_TYPE     PROCESS_ID,
    /*out*/ PROCESS_STATUS_TYPE *PROCESS_STATUS,
    /*out*/ RETURN_CODE_TYPE    *RETURN_CODE );

extern void CREATE_PROCESS (
    /*in */ PROCESS_ATTRIBUTE_TYPE *ATTRIBUTES,
    /*out*/ PROCESS_ID_TYPE        *PROCESS_ID,
    /*out*/ RETURN_CODE_TYPE       *RETURN_CODE );

extern void SET_PRIORITY (
    /*in */ PROCESS_ID_TYPE  PROCESS_ID,
    /*in */ PRIORITY_TYPE    PRIORITY,
    /*out*/ RETURN_CODE_TYPE *RETURN_CODE );

extern void SUSPEND_SELF (
    /*in */ SYSTEM_TIME_TYPE TIME_OUT,
    /*out*/ RETURN_CODE_TYPE *RETURN_CODE );

extern void SUSPEND (
    /*in */ PROCESS_ID_TYPE  PROCESS_ID,
    /*out*/ RETURN_CODE_TYPE *RETURN_CODE );

extern void RESUME (
    /*in */ PROCESS_ID_TYPE  PROCESS_ID,
    /*out*/ RETURN_CODE_TYPE *RETURN_CODE );

/* Never returns (should partix fail internally, the partition aborts instead). */
extern void STOP_SELF (void);

extern void STOP (
    /*in */ PROCESS_ID_TYPE  PROCESS_ID,
    /*out*/ RETURN_CODE_TYPE *RETURN_CODE );

extern void START (
    /*in */ PROCESS_ID_TYPE  PROCESS_ID,
    /*out*/ RETURN_CODE_TYPE *RETURN_CODE );

extern void DELAYED_START (
    /*in */ PROCESS_ID_TYPE  PROCESS_ID,
    /*in */ SYSTEM_TIME_TYPE DELAY_TIME,
    /*out*/ RETURN_CODE_TYPE *RETURN_CODE );

extern void LOCK_PREEMPTION (
    /*out*/ LOCK_LEVEL_TYPE  *LOCK_LEVEL,
    /*out*/ RETURN_CODE_TYPE *RETURN_CODE );

extern void UNLOCK_PREEMPTION (
    /*out*/ LOCK_LEVEL_TYPE  *LOCK_LEVEL,
    /*out*/ RETURN_CODE_TYPE *RETURN_CODE );

extern void GET_MY_ID (
    /*out*/ PROCESS_ID_TYPE  *PROCESS_ID,
    /*out*/ RETURN_CODE_TYPE *RETURN_CODE );

#ifdef __cplusplus
}
#endif

#endif /* ARINC653_PROCESS_H */
