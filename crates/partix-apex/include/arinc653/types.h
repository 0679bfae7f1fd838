/*
 * ARINC 653 APEX -- basic types (partix).
 *
 * Names, types, values and field order follow ARINC 653 Part 1 (and Part 2 for the module
 * schedules), as the POK, JetOS and AIR headers lay them out, so that an existing APEX partition
 * compiles unchanged. Sizes are fixed for a 64-bit Linux host: APEX_INTEGER is 32 bits,
 * SYSTEM_TIME_TYPE is a signed 64-bit count of nanoseconds.
 *
 * Add the directory that *contains* `arinc653/` to the include path (`-I .../include`), never
 * `arinc653/` itself: `arinc653/time.h` would otherwise hide the C library's <time.h>.
 */
#ifndef ARINC653_TYPES_H
#define ARINC653_TYPES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*----------------------------------------------------------------------------------------------*/
/* Base types                                                                                   */
/*----------------------------------------------------------------------------------------------*/

typedef uint8_t  APEX_BYTE;          /* 8-bit unsigned  */
typedef int32_t  APEX_INTEGER;       /* 32-bit signed   */
typedef uint32_t APEX_UNSIGNED;      /* 32-bit unsigned */
typedef int64_t  APEX_LONG_INTEGER;  /* 64-bit signed   */

/*----------------------------------------------------------------------------------------------*/
/* Implementation limits                                                                        */
/*----------------------------------------------------------------------------------------------*/

#define SYSTEM_LIMIT_NUMBER_OF_PARTITIONS  32    /* module scope    */
/* The message limits of the blackboards and buffers (CREATE_BLACKBOARD, CREATE_BUFFER). The ports
 * have their own, larger, limits (the configuration's MaxMessageSize / MaxNbMessages, below): a
 * buffer given to READ_SAMPLING_MESSAGE or RECEIVE_QUEUING_MESSAGE must hold the port's
 * MAX_MESSAGE_SIZE, which may exceed SYSTEM_LIMIT_MESSAGE_SIZE. */
#define SYSTEM_LIMIT_NUMBER_OF_MESSAGES    512   /* blackboards and buffers */
#define SYSTEM_LIMIT_MESSAGE_SIZE          8192  /* blackboards and buffers */
/* partix: the largest MaxMessageSize of a sampling port (a one-sided or tcp channel; a two-sided
 * one allows PARTIX_LIMIT_QUEUING_MESSAGE_SIZE, a udp one 65483 bytes, one datagram), of a queuing
 * port, and the largest MaxNbMessages of a queuing port, checked when the configuration is loaded. */
#define PARTIX_LIMIT_SAMPLING_MESSAGE_SIZE     268435456  /* 256 MiB */
#define PARTIX_LIMIT_QUEUING_MESSAGE_SIZE      16777216   /* 16 MiB */
#define PARTIX_LIMIT_NUMBER_OF_QUEUED_MESSAGES 16777216   /* 2^24 */
#define SYSTEM_LIMIT_NUMBER_OF_PROCESSES   64    /* partition scope */
#define SYSTEM_LIMIT_NUMBER_OF_SAMPLING_PORTS   512
#define SYSTEM_LIMIT_NUMBER_OF_QUEUING_PORTS    512
#define SYSTEM_LIMIT_NUMBER_OF_BUFFERS          256
#define SYSTEM_LIMIT_NUMBER_OF_BLACKBOARDS      256
#define SYSTEM_LIMIT_NUMBER_OF_SEMAPHORES       256
#define SYSTEM_LIMIT_NUMBER_OF_EVENTS           256

/*----------------------------------------------------------------------------------------------*/
/* Return codes                                                                                 */
/*----------------------------------------------------------------------------------------------*/

typedef enum {
    NO_ERROR       = 0,   /* request valid and operation performed                        */
    NO_ACTION      = 1,   /* status of system unaffected by request                       */
    NOT_AVAILABLE  = 2,   /* resource required by request unavailable                     */
    INVALID_PARAM  = 3,   /* invalid parameter specified in request                       */
    INVALID_CONFIG = 4,   /* parameter incompatible with configuration                    */
    INVALID_MODE   = 5,   /* request incompatible with current mode of operation          */
    TIMED_OUT      = 6    /* time-out tied up with request has expired                    */
} RETURN_CODE_TYPE;

/*----------------------------------------------------------------------------------------------*/
/* General types                                                                                */
/*----------------------------------------------------------------------------------------------*/

#define MAX_NAME_LENGTH 30

/*
 * A name is read up to its first NUL or MAX_NAME_LENGTH bytes, and these bytes must be UTF-8
 * (ASCII names, as ARINC 653 names are in practice, always are). A name that is not (e.g.
 * Latin-1 "\xe9") is
 * - INVALID_PARAM for CREATE_BLACKBOARD, CREATE_BUFFER, CREATE_SEMAPHORE and CREATE_EVENT,
 *   checked like a null pointer, before the service's own checks;
 * - INVALID_PARAM for CREATE_PROCESS (ATTRIBUTES.NAME) in the standard's order, with the other
 *   bad attributes: after the process-table check;
 * - INVALID_CONFIG for CREATE_SAMPLING_PORT, CREATE_QUEUING_PORT and every GET_*_ID (no object
 *   or configured port has that name).
 */
typedef char              NAME_TYPE[MAX_NAME_LENGTH];

/*
 * How a NAME_TYPE *parameter* is spelled in the service prototypes. The standard writes
 * `PROCESS_NAME_TYPE PROCESS_NAME`, which C adjusts to `char *` anyway; it is spelled as the
 * pointer here because gcc >= 11 otherwise warns (-Wstringop-overflow, an error under -Werror)
 * when a partition passes a shorter string literal such as GET_PROCESS_ID("GnC", ...), as most
 * partitions do. The ABI and every call are unchanged; C++ gets `const char *` for literals.
 */
#ifdef __cplusplus
#define APEX_NAME_PARAM const char *
#else
#define APEX_NAME_PARAM char *
#endif

/*
 * A NAME_TYPE *field* need not be NUL-terminated (a 30-character name fills it). Telling gcc so
 * keeps the usual strncpy(attr.NAME, "GnC", MAX_NAME_LENGTH) free of -Wstringop-truncation
 * (an error under -O2 -Werror). No effect on the layout.
 */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 8
#define APEX_NONSTRING __attribute__((__nonstring__))
#else
#define APEX_NONSTRING
#endif
typedef void *            SYSTEM_ADDRESS_TYPE;
typedef APEX_BYTE *       MESSAGE_ADDR_TYPE;
typedef APEX_INTEGER      MESSAGE_SIZE_TYPE;
typedef APEX_INTEGER      MESSAGE_RANGE_TYPE;
typedef APEX_INTEGER      WAITING_RANGE_TYPE;

typedef enum { SOURCE = 0, DESTINATION = 1 } PORT_DIRECTION_TYPE;

typedef enum { FIFO = 0, PRIORITY = 1 } QUEUING_DISCIPLINE_TYPE;

/*----------------------------------------------------------------------------------------------*/
/* Time                                                                                         */
/*----------------------------------------------------------------------------------------------*/

typedef APEX_LONG_INTEGER SYSTEM_TIME_TYPE;   /* nanoseconds; 64-bit signed */

#define INFINITE_TIME_VALUE (-1)

/*----------------------------------------------------------------------------------------------*/
/* Partition                                                                                    */
/*----------------------------------------------------------------------------------------------*/

#define MAX_NUMBER_OF_PARTITIONS SYSTEM_LIMIT_NUMBER_OF_PARTITIONS

typedef enum {
    IDLE       = 0,
    COLD_START = 1,
    WARM_START = 2,
    NORMAL     = 3
} OPERATING_MODE_TYPE;

typedef APEX_INTEGER PARTITION_ID_TYPE;

typedef APEX_UNSIGNED NUM_CORES_TYPE;

typedef enum {
    NORMAL_START         = 0,
    PARTITION_RESTART    = 1,
    HM_MODULE_RESTART    = 2,
    HM_PARTITION_RESTART = 3
} START_CONDITION_TYPE;

/*----------------------------------------------------------------------------------------------*/
/* Process                                                                                      */
/*----------------------------------------------------------------------------------------------*/

#define MAX_NUMBER_OF_PROCESSES SYSTEM_LIMIT_NUMBER_OF_PROCESSES

#define MIN_PRIORITY_VALUE 1
#define MAX_PRIORITY_VALUE 94
#define MAX_LOCK_LEVEL     16

typedef NAME_TYPE     PROCESS_NAME_TYPE;
typedef APEX_INTEGER  PROCESS_ID_TYPE;
typedef APEX_INTEGER  LOCK_LEVEL_TYPE;
typedef APEX_UNSIGNED STACK_SIZE_TYPE;
typedef APEX_INTEGER  PRIORITY_TYPE;

typedef enum {
    DORMANT = 0,
    READY   = 1,
    RUNNING = 2,
    WAITING = 3,
    FAULTED = 4
} PROCESS_STATE_TYPE;

typedef enum { SOFT = 0, HARD = 1 } DEADLINE_TYPE;

typedef struct {
    SYSTEM_TIME_TYPE    PERIOD;
    SYSTEM_TIME_TYPE    TIME_CAPACITY;
    SYSTEM_ADDRESS_TYPE ENTRY_POINT;
    STACK_SIZE_TYPE     STACK_SIZE;
    PRIORITY_TYPE       BASE_PRIORITY;
    DEADLINE_TYPE       DEADLINE;
    PROCESS_NAME_TYPE   NAME APEX_NONSTRING;
} PROCESS_ATTRIBUTE_TYPE;

typedef struct {
    SYSTEM_TIME_TYPE       DEADLINE_TIME;
    PRIORITY_TYPE          CURRENT_PRIORITY;
    PROCESS_STATE_TYPE     PROCESS_STATE;
    PROCESS_ATTRIBUTE_TYPE ATTRIBUTES;
} PROCESS_STATUS_TYPE;

typedef struct {
    SYSTEM_TIME_TYPE     PERIOD;
    SYSTEM_TIME_TYPE     DURATION;
    PARTITION_ID_TYPE    IDENTIFIER;
    LOCK_LEVEL_TYPE      LOCK_LEVEL;
    OPERATING_MODE_TYPE  OPERATING_MODE;
    START_CONDITION_TYPE START_CONDITION;
    NUM_CORES_TYPE       NUM_ASSIGNED_CORES;
} PARTITION_STATUS_TYPE;

/*----------------------------------------------------------------------------------------------*/
/* Health monitoring                                                                            */
/*----------------------------------------------------------------------------------------------*/

#define MAX_ERROR_MESSAGE_SIZE 128

typedef APEX_INTEGER ERROR_MESSAGE_SIZE_TYPE;

typedef APEX_BYTE ERROR_MESSAGE_TYPE[MAX_ERROR_MESSAGE_SIZE];

typedef enum {
    DEADLINE_MISSED   = 0,
    APPLICATION_ERROR = 1,
    NUMERIC_ERROR     = 2,
    ILLEGAL_REQUEST   = 3,
    STACK_OVERFLOW    = 4,
    MEMORY_VIOLATION  = 5,
    HARDWARE_FAULT    = 6,
    POWER_FAIL        = 7
} ERROR_CODE_TYPE;

typedef struct {
    ERROR_CODE_TYPE         ERROR_CODE;
    ERROR_MESSAGE_SIZE_TYPE LENGTH;
    PROCESS_ID_TYPE         FAILED_PROCESS_ID;
    SYSTEM_ADDRESS_TYPE     FAILED_ADDRESS;
    ERROR_MESSAGE_TYPE      MESSAGE;
} ERROR_STATUS_TYPE;

/*----------------------------------------------------------------------------------------------*/
/* Multiple module schedules (ARINC 653 Part 2)                                                 */
/*----------------------------------------------------------------------------------------------*/

typedef NAME_TYPE    SCHEDULE_NAME_TYPE;
typedef APEX_INTEGER SCHEDULE_ID_TYPE;

typedef struct {
    SYSTEM_TIME_TYPE TIME_OF_LAST_SCHEDULE_SWITCH;
    SCHEDULE_ID_TYPE CURRENT_SCHEDULE;
    SCHEDULE_ID_TYPE NEXT_SCHEDULE;
} SCHEDULE_STATUS_TYPE;
/* The name partix used before session 24 (the standard's is SCHEDULE_STATUS_TYPE). */
typedef SCHEDULE_STATUS_TYPE MODULE_SCHEDULE_STATUS_TYPE;

#ifdef __cplusplus
}
#endif

#endif /* ARINC653_TYPES_H */
