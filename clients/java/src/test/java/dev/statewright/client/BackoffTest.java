package dev.statewright.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class BackoffTest {
  private static final long MS = 1_000_000;

  private final AtomicLong now = new AtomicLong(1_000 * MS);
  private final Backoff backoff =
      new Backoff(Duration.ofMillis(100), Duration.ofSeconds(2), Duration.ofSeconds(30), now::get);

  private static void assertWithin(long step, long delay) {
    assertTrue(delay >= step / 2 && delay <= step, "delay " + delay + " outside [" + step / 2 + ", " + step + "]");
  }

  @Test
  void doublesFromTheInitialDelayUpToTheMaximumWithEqualJitter() {
    for (long step : new long[] {100, 200, 400, 800, 1600, 2000, 2000}) {
      assertWithin(step * MS, backoff.delayNanos());
    }
  }

  @Test
  void progressStartsOverFromTheInitialDelay() {
    backoff.delayNanos();
    backoff.delayNanos();
    backoff.reset();
    assertWithin(100 * MS, backoff.delayNanos());
  }

  @Test
  void theBudgetCountsFromTheFirstFailureAfterProgress() {
    now.addAndGet(3_600_000 * MS); // an hour of a quiet, healthy stream spends no budget
    assertWithin(100 * MS, backoff.delayNanos());
    now.addAndGet(29_999 * MS);
    assertTrue(backoff.delayNanos() > 0);
    now.addAndGet(1 * MS);
    assertEquals(-1, backoff.delayNanos());

    backoff.reset();
    assertWithin(100 * MS, backoff.delayNanos());
  }

  @Test
  void aZeroBudgetGivesUpAtTheFirstFailure() {
    Backoff none = new Backoff(Duration.ofMillis(100), Duration.ofSeconds(2), Duration.ZERO, now::get);
    assertEquals(-1, none.delayNanos());
  }

  @Test
  void aRetryInfoDelayLongerThanTheBackoffWinsWithinItsCap() {
    StatewrightException limited = StatewrightException.from(FakeService.rateLimited(Duration.ofMillis(300)));
    assertEquals(Duration.ofMillis(300).toNanos(), Backoff.atLeastRetryDelay(Duration.ofMillis(100).toNanos(), limited));
    assertEquals(Duration.ofSeconds(1).toNanos(), Backoff.atLeastRetryDelay(Duration.ofSeconds(1).toNanos(), limited));
    StatewrightException absurd = StatewrightException.from(FakeService.rateLimited(Duration.ofDays(3)));
    assertEquals(Backoff.MAX_RETRY_DELAY.toNanos(), Backoff.atLeastRetryDelay(1, absurd));
    assertEquals(7, Backoff.atLeastRetryDelay(7, new RuntimeException("no RetryInfo")));
    assertEquals(7, Backoff.atLeastRetryDelay(7, StatewrightException.from(io.grpc.Status.UNAVAILABLE.asRuntimeException())));
  }
}
