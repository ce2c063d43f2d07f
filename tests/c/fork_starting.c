/*
 * fork_starting: a fork child made while another thread of the parent is still starting
 * libaar.so. Run with hold_start.so as AAR_PAPI_LIBRARY: a thread starts the library
 * (aar_policy_name()) and its start-up waits for the program (hold_start_up below); meanwhile
 * main forks. The child calls aar_set_mode(ADAPTIVE1) twice and aar_policy_name() ("child ...");
 * once it has exited, the parent lets the start-up finish and does the same ("parent ...").
 *
 * Linked with -laar (as aar.h advises), so every function exists.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "aar.h"

static sem_t held, release;

/* Called by hold_start.so's constructor, inside libaar.so's start-up. */
void hold_start_up(void);
void hold_start_up(void)
{
	sem_post(&held);
	sem_wait(&release);
}

static void *start_library(void *unused)
{
	(void)unused;
	aar_policy_name();
	return NULL;
}

static void calls(const char *who)
{
	int first = aar_set_mode(0x20);
	int second = aar_set_mode(0x20);
	printf("%s aar_set_mode rc=%d,%d policy %s\n", who, first, second, aar_policy_name());
	fflush(stdout);
}

int main(void)
{
	pthread_t t;
	sem_init(&held, 0, 0);
	sem_init(&release, 0, 0);
	if (pthread_create(&t, NULL, start_library, NULL))
		return 1;
	sem_wait(&held);
	fflush(stdout);
	pid_t child = fork();
	if (child == 0) {
		calls("child");
		exit(0);
	}
	int status = -1;
	if (child < 0 || waitpid(child, &status, 0) != child)
		return 1;
	printf("child status=%d\n", status);
	sem_post(&release);
	pthread_join(t, NULL);
	calls("parent");
	return 0;
}
