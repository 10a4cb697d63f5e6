import { IsString, MaxLength, MinLength } from 'class-validator';

export class CreateWorkspaceDto {
  /**
   * The name of the new workspace; the slug is generated from it.
   * @example "Acme Prod"
   */
  @IsString()
  @MinLength(1)
  @MaxLength(100)
  name!: string;
}
