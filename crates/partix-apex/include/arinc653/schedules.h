/*
 * ARINC 653 Part 2 -- multiple module schedules (partix).
 *
 * SET_MODULE_SCHEDULE is reserved to system partitions; the switch happens at the end of the
 * current major time frame.
 */
#ifndef ARINC653_SCHEDULES_H
#define ARINC653_SCHEDULES_H

#include <arinc653/types.h>

#ifdef __cplusplus
extern "C" {
#endif

extern void SET_MODULE_SCHEDULE (
    /*in */ SCHEDULE_ID_TYPE SCHEDULE_ID,
    /*out*/ RETURN_CODE_TYPE *RETURN_CODE );

extern void GET_MODULE_SCHEDULE_STATUS (
    /*out*/ SCHEDULE_STATUS_TYPE *SCHEDULE_STATUS,
    /*out*/ RETURN_CODE_TYPE     *RETURN_CODE );

extern void GET_MODULE_SCHEDULE_ID (
    /*in */ APEX_NAME_PARAM    SCHEDULE_NAME,  /* SCHEDULE_NAME_TYPE */
    /*out*/ SCHEDULE_ID_TYPE   *SCHEDULE_ID,
    /*out*/ RETURN_CODE_TYPE   *RETURN_CODE );

#ifdef __cplusplus
}
#endif

#endif /* ARINC653_SCHEDULES_H */
