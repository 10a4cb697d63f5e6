import { Transform } from 'class-transformer';
import { IsInt, IsUUID, Max, Min } from 'class-validator';
import { decimalIntegerOrAsIs } from '../../config/decimal-integer';
import { IsOptionalNotNull } from '../../common/http/validation';

export const DEFAULT_DATABASE_PAGE = 200;
export const MAX_DATABASE_PAGE = 1000;

export class ListDatabasesQueryDto {
  /** Page size (decimal digits): at most 1000; 200 when omitted. When more remain, a `Link: <…>; rel="next"` header points to the next page. */
  @IsOptionalNotNull()
  @Transform(({ value }) => decimalIntegerOrAsIs(value))
  @IsInt()
  @Min(1)
  @Max(MAX_DATABASE_PAGE)
  limit?: number;

  /** Opaque cursor from a previous page's `Link` header. */
  @IsOptionalNotNull()
  @IsUUID(undefined, { message: 'cursor is not a cursor this service issued' })
  cursor?: string;
}
