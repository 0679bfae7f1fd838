/*
 * ARINC 653 APEX -- every service partix implements (umbrella header).
 *
 *   #include <arinc653/apex.h>
 *
 * Link with the static library (libpartix_apex.a, plus -lpthread -ldl -lm) or the shared one
 * (-lpartix_apex).
 */
#ifndef ARINC653_APEX_H
#define ARINC653_APEX_H

#include <arinc653/types.h>
#include <arinc653/partition.h>
#include <arinc653/process.h>
#include <arinc653/time.h>
#include <arinc653/error.h>
#include <arinc653/schedules.h>
#include <arinc653/sampling.h>
#include <arinc653/queueing.h>
#include <arinc653/blackboard.h>
#include <arinc653/buffer.h>
#include <arinc653/semaphore.h>
#include <arinc653/event.h>

#endif /* ARINC653_APEX_H */
