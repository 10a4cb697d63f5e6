import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { MetadataTransactions } from '../database/metadata-transactions';
import { StorageUsage } from '../insights/storage-usage.service';
import { ComputeUsagePeriods } from '../metrics/compute-usage-periods.service';
import { JobDispatcher } from '../queues/job-dispatcher';
import { Reconciler } from '../queues/reconciler';
import { currentReconcileTally } from '../queues/reconcile-tally';
import { SubscriptionLevel } from '../subscriptions/subscription-level';
import { SubscriptionsService } from '../subscriptions/subscriptions.service';
import { rateMonthJobId } from './billing-jobs';
import { BillingMonth, billingMonthOf, previousBillingMonth } from './billing-month';
import { MonthPrices, MonthPricesRepository } from './month-prices.repository';
import { RatedLinesRepository } from './rated-lines.repository';
import { RatedLine, rateMonth } from './rating';

/**
 * Keeps `billing_rated_lines` equal to the rating of the sources (compute usage periods,
 * subscription rows, storage held per database and month): idempotent, each run upserts the month's lines in place and deletes lines
 * whose source no longer falls in the month. A month is rated at the prices recorded for it when
 * it was first rated (MonthPricesRepository), so a change of the configuration's prices applies
 * from the next month on; compute carries its price on each usage period. Runs when totals are read and, for the current and
 * previous month of every workspace with something to bill, from a periodic sweep through the
 * `billing` queue.
 */
@Injectable()
export class BillingRater implements OnModuleInit {
  private readonly logger = new Logger(BillingRater.name);
  /** When the last sweep that read its sources started; a failed one does not count. */
  private lastSweep?: number;
  /** The sweep under way in this process, if any: a concurrent call waits for it instead of doubling it. */
  private sweeping?: Promise<number>;
  /** The month whose prices this process has seen recorded (see recordMonthPrices). */
  private pricesRecordedFor?: string;

  constructor(
    private readonly txHost: MetadataTransactions,
    private readonly config: AppConfig,
    private readonly usage: ComputeUsagePeriods,
    private readonly subscriptions: SubscriptionsService,
    private readonly jobs: JobDispatcher,
    private readonly reconciler: Reconciler,
    private readonly storage: StorageUsage,
    private readonly lines: RatedLinesRepository,
    private readonly monthPrices: MonthPricesRepository,
  ) {}

  onModuleInit(): void {
    this.reconciler.register('billing-rating', () => this.sweep());
  }

  /** The prices of the configuration, which a month not rated yet is recorded at. */
  private currentPrices(): MonthPrices {
    const env = this.config.env;
    return {
      proMonthlyPriceUsd: env.PRO_MONTHLY_PRICE_USD,
      storagePricePerGbMonthUsd: env.STORAGE_PRICE_PER_GB_MONTH_USD,
      freeStorageIncludedGb: env.FREE_STORAGE_INCLUDED_GB,
    };
  }

  /**
   * Rates one workspace's month, accruing usage up to `now` (by default the moment the month's lock
   * is held); answers the lines written. The sources are read with the lock held, so ratings of one
   * month apply in turn and the last one has read the latest sources: a rating that read them
   * before another one rated (a slow billing job) can no longer write over it with stale lines.
   */
  async rate(workspaceId: string, month: BillingMonth, now?: Date): Promise<RatedLine[]> {
    // The workspace holds FREE from its creation whether or not its subscription was ever read: its
    // row is written first (as the subscription endpoints do), so the rating has it and its allowance.
    await this.subscriptions.holdFreeFromCreation(workspaceId);
    return this.txHost.withTransaction(async () => {
      await this.lines.lockMonth(workspaceId, month.ym);
      const at = now ?? new Date();
      const prices = await this.monthPrices.recordedOr(
        month.ym,
        this.currentPrices(),
        month.ym < billingMonthOf(at).ym,
      );
      const periods = await this.usage.overlapping(workspaceId, month.start, month.end);
      const subscriptions = await this.subscriptions.overlapping(workspaceId, month.start, month.end);
      const heldSince = await this.subscriptions.heldSince(workspaceId);
      const storage = await this.storage.ofMonth(workspaceId, month.ym);
      const lines = rateMonth({
        month,
        now: at,
        periods,
        subscriptions,
        // FREE costs nothing and includes FREE_STORAGE_INCLUDED_GB; PRO costs its price and includes none.
        monthlyPrice: (level) => (level === (SubscriptionLevel.Pro as string) ? prices.proMonthlyPriceUsd : 0),
        storage: storage.map((s) => ({ databaseId: s.databaseId, byteSeconds: BigInt(s.byteSeconds) })),
        storagePricePerGbMonth: prices.storagePricePerGbMonthUsd,
        includedStorageGb: (level) => (level === (SubscriptionLevel.Free as string) ? prices.freeStorageIncludedGb : 0),
        heldSince: heldSince ?? undefined,
      });
      await this.lines.replaceMonth(workspaceId, month.ym, lines);
      return lines;
    });
  }

  /**
   * Enqueues the re-rating of the current and previous month of every workspace with something to
   * bill in them (compute usage, storage, a paid level), at most once per
   * BILLING_RATING_INTERVAL_SECONDS. A workspace on FREE with no usage is left out: its lines cost
   * nothing, and it is rated when its totals are read; every workspace holds FREE from its creation,
   * so counting those would re-rate every workspace ever made, every interval.
   *
   * The interval counts from the last sweep whose reads succeeded and whose jobs Redis took: one
   * that failed (the metadata database out of reach, Redis away) leaves the next reconcile pass to
   * try again, instead of postponing the re-rating by a whole interval. A call while a sweep runs in
   * this process joins it (answers 0).
   */
  async sweep(now = new Date()): Promise<number> {
    await this.recordMonthPrices(now);
    const intervalMs = this.config.env.BILLING_RATING_INTERVAL_SECONDS * 1000;
    if (this.sweeping)
      return this.sweeping.then(
        () => 0,
        () => 0,
      );
    if (this.lastSweep !== undefined && now.getTime() - this.lastSweep < intervalMs) return 0;
    this.sweeping = this.sweepNow(now).finally(() => (this.sweeping = undefined));
    return this.sweeping;
  }

  /**
   * Records the current month's prices at the first pass in it (every reconcile pass, whatever
   * BILLING_RATING_INTERVAL_SECONDS, and whether or not anything is billed yet): a change of the
   * configuration later in the month waits for the next.
   */
  private async recordMonthPrices(now: Date): Promise<void> {
    const { ym } = billingMonthOf(now);
    if (this.pricesRecordedFor === ym) return;
    await this.monthPrices.recordedOr(ym, this.currentPrices(), false);
    this.pricesRecordedFor = ym;
  }

  private async sweepNow(now: Date): Promise<number> {
    const current = billingMonthOf(now);
    const previous = previousBillingMonth(current);
    const workspaceIds = new Set([
      ...(await this.usage.workspacesWithUsage(previous.start, current.end)),
      ...(await this.subscriptions.workspacesPayingIn(previous.start, current.end)),
      ...(await this.storage.workspacesWithStorage([previous.ym, current.ym])),
    ]);
    // Read: this sweep counts, unless Redis did not take a job it owed (the dispatcher does not
    // throw; it counts such a job in the reconcile pass's tally): then the next pass sweeps again,
    // the one run at once when Redis is back among them, not the next interval.
    const tally = currentReconcileTally.getStore();
    const refusedBefore = tally?.notEnqueued ?? 0;
    const previousSweep = this.lastSweep;
    this.lastSweep = now.getTime();
    let enqueued = 0;
    for (const workspaceId of workspaceIds) {
      for (const month of [previous, current]) {
        const data = { workspaceId, ym: month.ym };
        // A job of that id that failed for good is replaced, or the month would never be re-rated.
        if (
          await this.jobs.redispatch('RateBillingMonth', data, {
            jobId: rateMonthJobId(workspaceId, month.ym),
          })
        )
          enqueued++;
      }
    }
    if ((tally?.notEnqueued ?? 0) > refusedBefore) this.lastSweep = previousSweep;
    if (enqueued) this.logger.log({ workspaces: workspaceIds.size, jobs: enqueued }, 'billing re-rating enqueued');
    return enqueued;
  }
}
