/*
 * ARINC 653 APEX -- event services (partix).
 *
 * An event is UP or DOWN (DOWN when created). WAIT_EVENT returns at once while it is UP and waits
 * while it is DOWN; SET_EVENT sets it UP and releases every waiting process. TIME_OUT is in
 * nanoseconds: 0 never waits, INFINITE_TIME_VALUE waits without limit.
 */
#ifndef ARINC653_EVENT_H
#define ARINC653_EVENT_H

#include <arinc653/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MAX_NUMBER_OF_EVENTS SYSTEM_LIMIT_NUMBER_OF_EVENTS

typedef NAME_TYPE    EVENT_NAME_TYPE;

typedef APEX_INTEGER EVENT_ID_TYPE;

typedef enum { DOWN = 0, UP = 1 } EVENT_STATE_TYPE;

typedef struct {
    EVENT_STATE_TYPE   EVENT_STATE;
    WAITING_RANGE_TYPE WAITING_PROCESSES;
} EVENT_STATUS_TYPE;

extern void CREATE_EVENT (
    /*in */ APEX_NAME_PARAM           EVENT_NAME,           /* EVENT_NAME_TYPE */
    /*out*/ EVENT_ID_TYPE             *EVENT_ID,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void SET_EVENT (
    /*in */ EVENT_ID_TYPE             EVENT_ID,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void RESET_EVENT (
    /*in */ EVENT_ID_TYPE             EVENT_ID,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void WAIT_EVENT (
    /*in */ EVENT_ID_TYPE             EVENT_ID,
    /*in */ SYSTEM_TIME_TYPE          TIME_OUT,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void GET_EVENT_ID (
    /*in */ APEX_NAME_PARAM           EVENT_NAME,           /* EVENT_NAME_TYPE */
    /*out*/ EVENT_ID_TYPE             *EVENT_ID,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void GET_EVENT_STATUS (
    /*in */ EVENT_ID_TYPE             EVENT_ID,
    /*out*/ EVENT_STATUS_TYPE         *EVENT_STATUS,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

#ifdef __cplusplus
}
#endif

#endif /* ARINC653_EVENT_H */
