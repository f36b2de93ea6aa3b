package dev.statewright.client;

/** What {@link StatewrightClient#execute} waits for. */
public enum Until {
  /** The instance rests: WAITING, COMPLETED, FAILED or CANCELLED. */
  REST,
  /** The instance finished: COMPLETED, FAILED or CANCELLED. */
  FINISH
}
