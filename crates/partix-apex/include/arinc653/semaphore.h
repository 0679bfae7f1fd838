/*
 * ARINC 653 APEX -- semaphore services (partix).
 *
 * A counting semaphore between the processes of the partition, with a value in
 * 0..MAXIMUM_VALUE (at most MAX_SEMAPHORE_VALUE). Processes waiting on it are released in its
 * QUEUING_DISCIPLINE order (FIFO, or PRIORITY: current priority, FIFO among equals). TIME_OUT is
 * in nanoseconds: 0 never waits, INFINITE_TIME_VALUE waits without limit.
 */
#ifndef ARINC653_SEMAPHORE_H
#define ARINC653_SEMAPHORE_H

#include <arinc653/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MAX_NUMBER_OF_SEMAPHORES SYSTEM_LIMIT_NUMBER_OF_SEMAPHORES

#define MAX_SEMAPHORE_VALUE 32767

typedef NAME_TYPE    SEMAPHORE_NAME_TYPE;

typedef APEX_INTEGER SEMAPHORE_ID_TYPE;

typedef APEX_INTEGER SEMAPHORE_VALUE_TYPE;

typedef struct {
    SEMAPHORE_VALUE_TYPE CURRENT_VALUE;
    SEMAPHORE_VALUE_TYPE MAXIMUM_VALUE;
    WAITING_RANGE_TYPE   WAITING_PROCESSES;
} SEMAPHORE_STATUS_TYPE;

extern void CREATE_SEMAPHORE (
    /*in */ APEX_NAME_PARAM           SEMAPHORE_NAME,       /* SEMAPHORE_NAME_TYPE */
    /*in */ SEMAPHORE_VALUE_TYPE      CURRENT_VALUE,
    /*in */ SEMAPHORE_VALUE_TYPE      MAXIMUM_VALUE,
    /*in */ QUEUING_DISCIPLINE_TYPE   QUEUING_DISCIPLINE,
    /*out*/ SEMAPHORE_ID_TYPE         *SEMAPHORE_ID,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void WAIT_SEMAPHORE (
    /*in */ SEMAPHORE_ID_TYPE         SEMAPHORE_ID,
    /*in */ SYSTEM_TIME_TYPE          TIME_OUT,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void SIGNAL_SEMAPHORE (
    /*in */ SEMAPHORE_ID_TYPE         SEMAPHORE_ID,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void GET_SEMAPHORE_ID (
    /*in */ APEX_NAME_PARAM           SEMAPHORE_NAME,       /* SEMAPHORE_NAME_TYPE */
    /*out*/ SEMAPHORE_ID_TYPE         *SEMAPHORE_ID,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void GET_SEMAPHORE_STATUS (
    /*in */ SEMAPHORE_ID_TYPE         SEMAPHORE_ID,
    /*out*/ SEMAPHORE_STATUS_TYPE     *SEMAPHORE_STATUS,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

#ifdef __cplusplus
}
#endif

#endif /* ARINC653_SEMAPHORE_H */
