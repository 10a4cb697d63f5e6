/** Regions the product knows. The integer is the stable `regionId` used in database summaries. */
export const REGIONS = {
  AWS_US_WEST_2: { id: 1, label: 'US West (Oregon)', creatable: true },
  AWS_EU_CENTRAL_1: { id: 2, label: 'Europe (Frankfurt)', creatable: true },
  AZURE_EASTUS: { id: 3, label: 'Azure East US', creatable: false },
} as const;

export type Region = keyof typeof REGIONS;
export const ALL_REGIONS = Object.keys(REGIONS) as Region[];
/** Regions a database may be created in (the published API accepts only these two). */
export const CREATABLE_REGIONS = ALL_REGIONS.filter((r) => REGIONS[r].creatable);

export function regionId(region: Region): number {
  return REGIONS[region].id;
}
